# item2e with the closer process in place (issue 41, nineteenth sitting): a lingering socket no longer
# blocks anything of the server's (sockets are closed in the closer process), so the blocked close is a
# pipe instead, whose last close waits while a splice from a silent TCP socket holds its lock (a stand-in
# for a FUSE file's flush, which needs no mount). Then one message of 253 descriptors behind it, then
# EXTRA connections each carrying a descriptor; meanwhile uid 65534 registers every 5 s.
# usage: item2f.py NAME EXTRA_CONNS HOLD_SECONDS
import sys, time, os, socket, threading
from shm import *
name = sys.argv[1]; E = int(sys.argv[2]); H = int(sys.argv[3])
path = f"/tmp/atk2/{name}/shm.sock"; p = pid(name); P = ports(name)
def other_user_register(uid=65534):
    r, w = os.pipe(); ch = os.fork()
    if ch == 0:
        os.close(r); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
        res, dt, s = register(path, timeout=4); os.write(w, repr((res[0], res[1][:60], dt)).encode()); os._exit(0)
    os.close(w); out = os.read(r, 1000).decode(); os.waitpid(ch, 0); os.close(r); return out
def stalled_pipe():
    l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
    tx = socket.create_connection(l.getsockname()); rx, _ = l.accept()
    r, w = os.pipe()
    threading.Thread(target=lambda: os.splice(rx.fileno(), w, 1), daemon=True).start()
    time.sleep(0.05)
    return r, (l, tx, rx, w)
print("before: uid65534 reg", other_user_register(), "fds", nfd(p))
t0 = time.time()
for attempt in range(5):  # park it: the server's copy must be the last one (else ours blocks: try again)
    r, keep = stalled_pipe(); s = conn(path); send_fds(s, rec(4096), [r])
    closer = threading.Thread(target=os.close, args=(r,), daemon=True); closer.start()
    print("stalled pipe:", reply(s)[0]); s.close(); closer.join(0.2)
    if not closer.is_alive(): break
    keep[1].send(b"x"); closer.join()
rp, wp = os.pipe(); s = conn(path); send_fds(s, rec(4096), [rp] * 253); print("253 fds:", reply(s)[0]); s.close()
ok = 0; last = None
for i in range(E):
    try:
        s = conn(path, 0.5); s.settimeout(2)
        try: send_fds(s, rec(4096), [rp])
        except OSError: pass
        last = reply(s); s.close(); ok += 1
    except Exception as e:
        last = repr(e); break
print("extra conns: %d answered, last %s; setup took %.2fs, fds %d" % (ok, str(last)[:100], time.time() - t0, nfd(p)))
t = time.time()
while time.time() - t < H:
    print(" +%.0fs uid65534 reg %s | fds %d | health %s" % (time.time() - t, other_user_register(), nfd(p), health(P["health_port"])[:2])); time.sleep(5)
