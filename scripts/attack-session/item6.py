import sys, time, socket, threading
from common import *
name = sys.argv[1]; P = ports(name); p = pid(name); HP = P["health_port"]
def probe(): return health(HP, 2)[:2][0]
print("baseline probe rc", probe())
for N in (8, 15, 16, 17, 32):
    hold = []
    for i in range(N):
        s = socket.socket(); s.connect(("127.0.0.1", HP)); hold.append(s)
    time.sleep(0.2); t = time.time(); r = health(HP, 2)
    print("raw idle %2d: probe %s after %.1fs" % (N, r, time.time() - t))
    for s in hold: s.close()
    time.sleep(2.5)
# how long: 32 raw idle, probe every 0.25s until OK
hold = [socket.create_connection(("127.0.0.1", HP)) for i in range(32)]; t = time.time()
while time.time() - t < 10:
    r = health(HP, 1)
    if r[0] == 0: break
    time.sleep(0.1)
print("32 raw idle connections (not reconnecting): probe first OK after %.2fs" % (time.time() - t))
for s in hold: s.close()
time.sleep(3)
# HTTP/2-preface idle
hold = []
for i in range(32):
    s = socket.create_connection(("127.0.0.1", HP)); s.sendall(PREFACE + SETTINGS); hold.append(s)
t = time.time()
while time.time() - t < 12:
    r = health(HP, 1)
    if r[0] == 0: break
    time.sleep(0.1)
print("32 HTTP/2 idle connections: probe first OK after %.2fs" % (time.time() - t))
for s in hold: s.close()
time.sleep(3)
# attacker that keeps 32 connections open, reconnecting any the server closes (every 50 ms check)
stop = [False]; conns = 0
def attacker():
    global conns
    hold = []
    while not stop[0]:
        alive = []
        for s in hold:
            s.setblocking(False)
            try:
                if s.recv(1) == b"": s.close(); continue
            except BlockingIOError: pass
            except Exception: s.close(); continue
            alive.append(s)
        hold = alive
        while len(hold) < 40:
            try: hold.append(socket.create_connection(("127.0.0.1", HP), timeout=1)); conns += 1
            except Exception: break
        time.sleep(0.05)
    for s in hold: s.close()
th = threading.Thread(target=attacker); th.start(); time.sleep(1)
ok = fail = 0; t = time.time(); c0 = cpu(p)
while time.time() - t < 15:
    if health(HP, 1)[0] == 0: ok += 1
    else: fail += 1
    time.sleep(0.3)
stop[0] = True; th.join()
print("reconnecting attacker (keeps 40): probes ok %d fail %d in 15s; attacker opened %d connections; server cpu %.2fs" % (ok, fail, conns, cpu(p) - c0))
print("after:", health(HP, 2))
