import socket, struct, os, fcntl, time, array
from common import *
def rec(size, kind=1, magic=b"GSRQ", version=1):
    return magic + struct.pack("<HHQQQ", version, kind, size, 0, 0)
def memfd(size=4096, seals=fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW):
    fd = os.memfd_create("r", os.MFD_ALLOW_SEALING); os.ftruncate(fd, size)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals); return fd
def conn(path, timeout=5):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.settimeout(timeout); s.connect(path); return s
def send_fds(s, data, fds):
    return s.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else [])
def reply(s):
    r = s.recv(600)
    if len(r) < 16: return ("short", r)
    code, ln = struct.unpack("<II", r[8:16]); return (code, r[16:16+ln].decode(errors="replace"))
def register(path, size=4096, timeout=5):
    t = time.time()
    try:
        s = conn(path, timeout); fd = memfd(size); send_fds(s, rec(size), [fd]); os.close(fd)
        r = reply(s); return r, round(time.time() - t, 3), s
    except Exception as e:
        return ("EXC", repr(e)), round(time.time() - t, 3), None
_keep = []
def linger_socket(secs=30):
    """A TCP socket whose close blocks `secs` s: SO_LINGER on, send queue full, peer never accepts/reads."""
    if not _keep:
        l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        l.bind(("127.0.0.1", 0)); l.listen(4096); _keep.append(l)
    l = _keep[0]
    c = socket.socket(); c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, secs))
    c.connect(l.getsockname()); c.setblocking(False)
    n = 0
    try:
        while True: n += c.send(b"x" * 65536)
    except BlockingIOError: pass
    return c, n
