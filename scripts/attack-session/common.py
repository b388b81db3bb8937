import socket, struct, time, os, subprocess
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
def frame(typ, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([typ, flags]) + struct.pack(">I", sid) + payload
SETTINGS = frame(4, 0, 0)
def ports(name):
    d = {}
    for l in open(f"/tmp/atk2/{name}/ports"):
        k, v = l.strip().split("="); d[k] = int(v)
    return d
def pid(name): return int(open(f"/tmp/atk2/{name}/pid").read())
def nfd(p):
    try: return len(os.listdir(f"/proc/{p}/fd"))
    except Exception as e: return -1
def cpu(p):
    f = open(f"/proc/{p}/stat").read().rsplit(")",1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def loglines(name): return sum(1 for _ in open(f"/tmp/atk2/{name}/log"))
def health(port, timeout=3):
    t = time.time()
    r = subprocess.run(["/tmp/attack/gpusort", "health", "-s", f"127.0.0.1:{port}", "--timeout", str(timeout)], capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip().replace("\n", " | ")[:200], round(time.time() - t, 2)
def sort(port, timeout=5, extra=()):
    t = time.time()
    r = subprocess.run(["/tmp/attack/gpusort", "sort", "-s", f"127.0.0.1:{port}", "-i", "/tmp/atk2/in.txt", "-o", "/tmp/atk2/out.txt", "-t", "i32", "--timeout", str(timeout), *extra], capture_output=True, text=True)
    return r.returncode, (r.stdout + r.stderr).strip().replace("\n", " | ")[:300], round(time.time() - t, 2)
# HPACK literal without indexing, new name, no huffman
def hint(v, prefix, first=0):
    m = (1 << prefix) - 1
    if v < m: return bytes([first | v])
    out = [first | m]; v -= m
    while v >= 128: out.append((v & 127) | 128); v >>= 7
    out.append(v); return bytes(out)
def hdr(n, v):
    n = n.encode() if isinstance(n, str) else n; v = v.encode() if isinstance(v, str) else v
    return b"\x00" + hint(len(n), 7) + n + hint(len(v), 7) + v
def grpc_headers(path, auth=None, authority="127.0.0.1"):
    b = hdr(":method", "POST") + hdr(":scheme", "http") + hdr(":path", path) + hdr(":authority", authority) + \
        hdr("content-type", "application/grpc") + hdr("te", "trailers")
    if auth is not None: b += hdr("authorization", auth)
    return b
def readframes(s, timeout=0.5):
    s.settimeout(timeout); buf = b""; out = []
    try:
        while True:
            d = s.recv(65536)
            if not d: out.append(("EOF",)); break
            buf += d
    except socket.timeout: pass
    except OSError as e: out.append(("ERR", str(e)))
    while len(buf) >= 9:
        ln = int.from_bytes(buf[:3], "big"); typ, fl = buf[3], buf[4]; sid = int.from_bytes(buf[5:9], "big") & 0x7fffffff
        out.append((typ, fl, sid, buf[9:9+ln])); buf = buf[9+ln:]
    return out
