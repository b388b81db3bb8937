import sys, time, socket
from common import *
name = sys.argv[1]; P = ports(name); p = pid(name); MP = P["metrics_port"]
def scrape(timeout=30):
    t = time.time(); s = socket.socket(); s.settimeout(timeout)
    try:
        s.connect(("127.0.0.1", MP)); s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"); d = b""
        while True:
            x = s.recv(65536)
            if not x: break
            d += x
            if b"\r\n\r\n" in d:
                h, b = d.split(b"\r\n\r\n", 1)
                cl = [l for l in h.split(b"\r\n") if l.lower().startswith(b"content-length")]
                if cl and len(b) >= int(cl[0].split(b":")[1]): break
        return d[:15].decode(), len(d), round(time.time() - t, 3)
    except Exception as e: return "ERR " + repr(e), 0, round(time.time() - t, 3)
    finally: s.close()
print("baseline", scrape())
for N in (60, 300, 1000):
    hold = []
    for i in range(N):
        s = socket.socket(); s.connect(("127.0.0.1", MP)); hold.append(s)
    time.sleep(0.5)
    print("idle %4d: scrape %s  fds %d" % (N, scrape(), nfd(p)))
    for s in hold: s.close()
    time.sleep(0.3)
# trickled request: one byte per 0.5 s, 30 trickle connections
tr = []
for i in range(30):
    s = socket.socket(); s.connect(("127.0.0.1", MP)); tr.append(s)
for k in range(6):
    for s in tr:
        try: s.send(b"GET /metrics HTTP/1.1\r\n"[k:k+1])
        except Exception: pass
    time.sleep(0.5)
print("30 trickling: scrape", scrape())
alive = 0
for s in tr:
    s.setblocking(False)
    try:
        x = s.recv(100); alive += 0 if x == b"" else 0
    except BlockingIOError: alive += 1
    except Exception: pass
print("  trickle conns still open:", alive)
for s in tr: s.close()
# over-long header
s = socket.socket(); s.settimeout(5); s.connect(("127.0.0.1", MP))
try:
    s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 1000000 + b"\r\n\r\n"); print("1MB header ->", s.recv(200)[:60])
except Exception as e: print("1MB header ->", repr(e)[:80])
s.close()
s = socket.socket(); s.settimeout(5); s.connect(("127.0.0.1", MP)); s.sendall(bytes(range(256)) * 10 + b"\r\n\r\n")
try: print("garbage ->", s.recv(200)[:60])
except Exception as e: print("garbage ->", repr(e)[:80])
s.close()
# readers that never read: 50 connections, each pipelines 2000 requests and never reads
nr = []
for i in range(50):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096); s.connect(("127.0.0.1", MP)); s.setblocking(False)
    try: s.send(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 2000)
    except Exception: pass
    nr.append(s)
time.sleep(1)
print("50 non-readers: scrape", scrape(), "fds", nfd(p), "rss kB", open(f"/proc/{p}/status").read().split("VmRSS:")[1].split()[0])
c0 = cpu(p); time.sleep(3); print("  cpu in 3s %.2f" % (cpu(p) - c0))
for s in nr: s.close()
print("after", scrape())
