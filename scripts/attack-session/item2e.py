# One local user stops the shared-memory registration socket for every user for as long as it likes:
# park one lingering close (SO_LINGER with a huge l_linger, send queue full, peer never accepts), send one
# message of 253 cheap descriptors, then open EXTRA more connections (each refused, each queued behind the
# blocked close, +1 held): once the user's held descriptors pass the whole closing share (limit/16), the
# socket stops accepting, 100 ms at a time, for every user, until the close ends (never, while this runs).
# usage: item2e.py NAME LINGER_SECONDS EXTRA_CONNS HOLD_SECONDS
import sys, time, os, socket
from shm import *
name = sys.argv[1]; L = int(sys.argv[2]); E = int(sys.argv[3]); H = int(sys.argv[4])
path = f"/tmp/atk2/{name}/shm.sock"; p = pid(name); P = ports(name)
def other_user_register(uid=65534):
    r, w = os.pipe(); ch = os.fork()
    if ch == 0:
        os.close(r); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
        res, dt, s = register(path, timeout=4); os.write(w, repr((res[0], res[1][:60], dt)).encode()); os._exit(0)
    os.close(w); out = os.read(r, 1000).decode(); os.waitpid(ch, 0); os.close(r); return out
print("before: uid65534 reg", other_user_register(), "fds", nfd(p))
t0 = time.time()
c, n = linger_socket(L); s = conn(path); send_fds(s, rec(4096), [c.fileno()]); c.close(); print("linger:", reply(s)[0]); s.close()
rp, wp = os.pipe(); s = conn(path); send_fds(s, rec(4096), [rp] * 253); print("253 fds:", reply(s)[0]); s.close()
ok = 0; last = None
for i in range(E):
    try:
        s = conn(path, 0.5); s.settimeout(0.5); last = reply(s); s.close(); ok += 1
    except Exception as e:
        last = repr(e); break
print("extra conns: %d answered, last %s; setup took %.2fs, fds %d" % (ok, str(last)[:100], time.time() - t0, nfd(p)))
t = time.time()
while time.time() - t < H:
    print(" +%.0fs uid65534 reg %s | fds %d | health %s" % (time.time() - t, other_user_register(), nfd(p), health(P["health_port"])[:2])); time.sleep(5)
