# With the table full (EMFILE, via item2_trunc.py in the background), a connection waiting on each port:
# CPU used and log lines over 10 s.
import sys, time, socket
from common import *
name = sys.argv[1]; P = ports(name); p = pid(name)
print("fds", nfd(p))
hold = []
for port in ("data_port", "metrics_port", "health_port", "grpc_port"):
    for i in range(5):
        s = socket.socket(); s.connect(("127.0.0.1", P[port])); hold.append(s)
c0 = cpu(p); l0 = loglines(name); t0 = time.time(); time.sleep(10)
print("fds %d; CPU used %.2fs in %.1fs; log lines +%d" % (nfd(p), cpu(p) - c0, time.time() - t0, loglines(name) - l0))
s = socket.socket(); s.settimeout(3); s.connect(("127.0.0.1", P["metrics_port"])); s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
try: print("metrics scrape during EMFILE:", s.recv(100)[:40])
except Exception as e: print("metrics scrape during EMFILE:", e)
