import sys, socket, time, threading
from common import *
name = sys.argv[1]; N = int(sys.argv[2]) if len(sys.argv) > 2 else 400
P = ports(name); p = pid(name)
print("start fds", nfd(p), "cpu", cpu(p), "log", loglines(name), "health", health(P["health_port"]))
socks = []; fails = 0
for i in range(N):
    s = socket.socket(); s.setblocking(True); s.settimeout(2)
    try:
        s.connect(("127.0.0.1", P["grpc_port"])); s.sendall(PREFACE + SETTINGS); socks.append(s)
    except Exception as e:
        fails += 1; s.close()
print("opened", len(socks), "connect fails", fails)
time.sleep(2)
# how many got a server SETTINGS back (i.e. accepted by gRPC)
acc = 0
for s in socks:
    s.setblocking(False)
    try:
        d = s.recv(65536)
        if d: acc += 1
    except BlockingIOError: pass
    except Exception: pass
print("connections that got server bytes (accepted):", acc)
c0 = cpu(p); l0 = loglines(name); t0 = time.time()
for k in range(3):
    print(" during: fds", nfd(p), "health", health(P["health_port"]), "sort", sort(P["grpc_port"], 3))
time.sleep(3)
print(" cpu used over %.1fs: %.2fs; log lines added %d" % (time.time() - t0, cpu(p) - c0, loglines(name) - l0))
for s in socks: s.close()
t1 = time.time()
for k in range(10):
    h = health(P["health_port"]); so = sort(P["grpc_port"], 3)
    print(" after close +%.1fs: fds %d health %s sort %s" % (time.time() - t1, nfd(p), h, so))
    if h[0] == 0 and so[0] == 0: break
    time.sleep(1)
