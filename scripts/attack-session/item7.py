import sys, time, socket, struct, os, fcntl
from shm import *
name = sys.argv[1]; P = ports(name); p = pid(name); path = f"/tmp/atk2/{name}/shm.sock"
def dp(data, wait=2):
    s = socket.create_connection(("127.0.0.1", P["data_port"])); s.settimeout(wait)
    try:
        s.sendall(data); r = s.recv(2000)
        if len(r) >= 32:
            code, tl = struct.unpack("<II", r[8:16]); return code, r[32:32+tl][:80]
        return r[:40]
    except Exception as e: return repr(e)[:60]
    finally: s.close()
hdr = lambda magic=b"GSDQ", ver=1, idx=0, nbytes=4, ticket=b"\x00"*32, r1=0: magic + struct.pack("<HHIIQ", ver, 0, idx, r1, nbytes) + ticket + struct.pack("<Q", 0)
print("data garbage:", dp(os.urandom(64)))
print("data bad ticket:", dp(hdr(ticket=os.urandom(32))))
print("data huge bytes:", dp(hdr(nbytes=2**64-1, ticket=os.urandom(32))))
print("data version 9:", dp(hdr(ver=9)))
print("data short header then stall (3s):", dp(b"GSDQ", 3))
print("data 1 MB garbage:", dp(os.urandom(1 << 20)))
# shm registration malformed
def shm_try(data, fds, label):
    try:
        s = conn(path, 3); send_fds(s, data, fds); print(" shm", label, "->", str(reply(s))[:130]); s.close()
    except Exception as e: print(" shm", label, "->", repr(e)[:100])
m = memfd(4096)
shm_try(b"", [m], "empty+fd")
shm_try(b"", [], "empty no fd")
shm_try(rec(4096)[:31], [m], "31 bytes")
shm_try(rec(4096) + b"x", [m], "33 bytes")
shm_try(b"x" * 200000, [m], "200KB")
shm_try(rec(4096, kind=2), [m], "kind 2 on cpu")
shm_try(rec(4096, kind=7), [m], "kind 7")
shm_try(rec(0), [m], "size 0")
shm_try(rec(2**63), [m], "size 2^63")
shm_try(rec(2**64 - 1), [m], "size 2^64-1")
shm_try(rec(8192), [m], "size > memfd")
shm_try(rec(4096, version=2), [m], "version 2")
shm_try(rec(4096), [m, m], "two fds")
mw = memfd(4096, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_WRITE); shm_try(rec(4096), [mw], "write-sealed")
mu = os.memfd_create("u"); os.ftruncate(mu, 4096); shm_try(rec(4096), [mu], "unsealed")
ro = os.open(f"/proc/self/fd/{m}", os.O_RDONLY); shm_try(rec(4096), [ro], "read-only reopen")
shm_try(rec(4096), [os.open("/dev/null", os.O_RDWR)], "/dev/null")
shm_try(rec(4096), [os.open("/dev/zero", os.O_RDWR)], "/dev/zero")
ep = __import__("select").epoll(); shm_try(rec(4096), [ep.fileno()], "epoll fd")
sp = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET); shm_try(rec(4096), [sp[0].fileno()], "its own kind of socket")
# calls records
def call(token=b"", rid=b"", req=b"", method=1, ver=1, timeout=1000, r=0, fds=(), extra=b""):
    return b"GSCQ" + struct.pack("<HHIHHIIQ", ver, method, timeout, len(token), len(rid), len(req), r, 0) + token + rid + req + extra
def call_try(data, fds, label, hang=False):
    try:
        s = conn(path, 3); send_fds(s, data, list(fds))
        if hang: s.close(); print(" call", label, "-> hung up"); return
        r = s.recv(70000)
        if len(r) >= 32:
            fl, code, ml, rl = struct.unpack("<HIII", r[6:20]); print(" call", label, "-> code", code, r[32:32+ml][:100])
        else: print(" call", label, "->", r[:40])
        s.close()
    except Exception as e: print(" call", label, "->", repr(e)[:100])
call_try(call(), [], "empty Sort")
call_try(call(req=b"\xff" * 50), [], "garbage proto")
call_try(call(method=9), [], "method 9")
call_try(call(ver=3), [], "version 3")
call_try(call(r=1), [], "reserved")
call_try(call(token=b"a" * 4096, rid=b"\x00\x01" * 64), [], "long token, control rid")
call_try(call() + b"zz", [], "length mismatch")
call_try(call(), [m], "with fd")
call_try(call(req=bytes([0x12, 0x04, 1, 2, 3, 4])), [], "inline keys (field 2)")
call_try(call(req=bytes([0x0a, 0x02, 0x08, 0x01, 0x12, 0x04, 1, 2, 3, 4]), timeout=0), [], "hang up", hang=True)
print("fds", nfd(p), "health", health(P["health_port"]), "sort", sort(P["grpc_port"]))
