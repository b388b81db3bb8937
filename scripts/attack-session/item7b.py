# A calls connection (first record a GSCQ call) then a call record carrying a lingering socket; does SIGTERM
# still stop the server promptly, do registrations still work?   usage: NAME LINGER [trunc]
import sys, time, os, socket, struct
from shm import *
name = sys.argv[1]; L = int(sys.argv[2]); path = f"/tmp/atk2/{name}/shm.sock"; p = pid(name); P = ports(name)
def call(req=b""): return b"GSCQ" + struct.pack("<HHIHHIIQ", 1, 1, 1000, 0, 0, len(req), 0, 0) + req
conns = []
for k in range(1 if len(sys.argv) > 3 else 3):
    s = conn(path); send_fds(s, call(), []); r = s.recv(70000); print("first call code", struct.unpack("<I", r[8:12])[0])
    c, n = linger_socket(L); rp, wp = os.pipe()
    fds = [rp] * 252 + [c.fileno()] if len(sys.argv) > 3 else [c.fileno()]
    send_fds(s, call(), fds); c.close(); conns.append(s)
time.sleep(1)
for t in os.listdir(f"/proc/{p}/task"):
    w = open(f"/proc/{p}/task/{t}/wchan").read()
    if w == "wait_woken": print("blocked thread:", open(f"/proc/{p}/task/{t}/comm").read().strip(), "syscall", open(f"/proc/{p}/task/{t}/syscall").read().split()[0])
r, dt, rs = register(path, timeout=4); print("memfd registration:", r[0], dt, "| fds", nfd(p))
t = time.time(); os.kill(p, 15)
while time.time() - t < 40:
    try:
        if open(f"/proc/{p}/stat").read().split()[2] == "Z": break
    except Exception: break
    time.sleep(0.05)
print("SIGTERM -> gone after %.2fs" % (time.time() - t))
