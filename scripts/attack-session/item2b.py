# usage: item2b.py NAME NCONN [sigterm]
import sys, time, os, socket, threading
from shm import *
name = sys.argv[1]; N = int(sys.argv[2]); path = f"/tmp/atk2/{name}/shm.sock"; p = pid(name)
P = ports(name)
def other_user_register():
    r, w = os.pipe(); ch = os.fork()
    if ch == 0:
        os.close(r); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)
        res, dt, s = register(path, timeout=10)
        os.write(w, repr((res[0], res[1][:90], dt)).encode()); os._exit(0)
    os.close(w); out = os.read(r, 1000).decode(); os.waitpid(ch, 0); os.close(r); return out
def wchans():
    out = {}
    for t in os.listdir(f"/proc/{p}/task"):
        try: w = open(f"/proc/{p}/task/{t}/wchan").read()
        except Exception: w = "?"
        out[w] = out.get(w, 0) + 1
    return out
print("fds before", nfd(p))
c, n = linger_socket(30)
s = conn(path); send_fds(s, rec(4096), [c.fileno()]); c.close(); print("linger reg:", reply(s)[0]); s.close()
time.sleep(0.3); print("threads wchan:", wchans())
rp, wp = os.pipe()
t0 = time.time(); conns = []; codes = {}; maxfd = 0
for i in range(N):
    try:
        s = conn(path, 2); send_fds(s, rec(4096), [rp] * 253); conns.append(s)
    except Exception as e:
        codes[repr(e)[:60]] = codes.get(repr(e)[:60], 0) + 1
    maxfd = max(maxfd, nfd(p))
time.sleep(0.5)
for s in conns:
    s.setblocking(False)
    try: r = reply(s); k = (r[0], r[1][:110])
    except BlockingIOError: k = "no reply"
    except Exception as e: k = repr(e)[:60]
    codes[k] = codes.get(k, 0) + 1
print("(b) flood %d conns in %.2fs; max server fds seen %d; now %d" % (N, time.time() - t0, maxfd, nfd(p)))
for k, v in codes.items(): print("   ", v, "x", k)
print("(b) health", health(P["health_port"]), "sort", sort(P["grpc_port"]))
r, dt, rs = register(path); print("(b) same user (root) memfd registration:", r[0], r[1][:120], dt)
print("(c) uid 65534 memfd registration:", other_user_register())
if len(sys.argv) > 3:
    t = time.time(); os.kill(p, 15)
    while os.path.exists(f"/proc/{p}") and open(f"/proc/{p}/stat").read().split()[2] != "Z" and time.time() - t < 40: time.sleep(0.05)
    print("(d) SIGTERM -> exit after %.2fs" % (time.time() - t))
else:
    for k in range(8):
        time.sleep(5); print("  +%ds fds %d" % (5 * (k + 1), nfd(p)), "uid0 reg", register(path)[0][0])
