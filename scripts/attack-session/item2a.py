import sys, time, os, socket
from shm import *
name = sys.argv[1]; path = f"/tmp/atk2/{name}/shm.sock"; p = pid(name)
print("fds before", nfd(p))
c, n = linger_socket(30); print("linger socket queued", n, "bytes")
s = conn(path); t = time.time(); send_fds(s, rec(4096), [c.fileno()]); c.close()
print("linger registration reply", reply(s), round(time.time() - t, 3)); s.close()
for i in range(3):
    r, dt, rs = register(path); print("(a) memfd registration", r[0], r[1][:80], dt, "s"); rs and rs.close()
print("fds", nfd(p))
