#!/usr/bin/env python3
"""Hostile clients for descriptor_exhaustion_test.sh (issue 41): raw sockets, standard library only.

  hold HOST PORT COUNT READY_FILE STOP_FILE [MAX_SECONDS]
      Opens COUNT TCP connections to a gRPC port, each sending the HTTP/2 client preface and an empty
      SETTINGS frame, and holds them; every second it reopens those the server closed, so that refusals
      keep coming for as long as it holds. Writes READY_FILE once the first COUNT are opened, then holds
      until STOP_FILE exists (or MAX_SECONDS, default 120, pass), closes them all, prints
      most_held=N (the most it saw the server hold open a second after they were opened) and exits 0.

  stall-register SOCKET_PATH SERVER_PID RESULT_FILE STOP_FILE [MAX_SECONDS]
      Registers, on a gpusort --shm-socket, a TCP socket whose close blocks (SO_LINGER 30 s, a full send
      queue, a peer that never reads), handing the server the last reference: the server (SERVER_PID, a
      process this user may signal) is held stopped (SIGSTOP) while the record is sent and the helper's copy
      closed, then continued (SIGCONT). Then at once a proper sealed memfd on a new connection. Writes
      key=value lines to RESULT_FILE (stall_code, stall_reply_s, memfd_code, memfd_reply_s, ...), then
      keeps the stalled socket's peer and the memfd's registration open until STOP_FILE exists (or
      MAX_SECONDS, default 120, pass).

Lines on stdout say what happened, with seconds since the start.
"""
import fcntl
import os
import resource
import select
import signal
import socket
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EMPTY_SETTINGS = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])

REQUEST_MAGIC = b"GSRQ"
REPLY_MAGIC = b"GSRP"
REPLY_BYTES = 512
KIND_HOST_MEMORY = 1

F_ADD_SEALS = getattr(fcntl, "F_ADD_SEALS", 1033)
F_SEAL_SHRINK = getattr(fcntl, "F_SEAL_SHRINK", 2)
TIOCOUTQ = 0x5411  # SIOCOUTQ: bytes in a TCP socket's send queue not yet acknowledged

START = time.monotonic()


def say(text):
    print(f"[helper {time.monotonic() - START:7.2f}s] {text}", flush=True)


def write_atomically(path, text):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def wait_for_file(path, max_seconds):
    deadline = time.monotonic() + max_seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            say(f"{path} did not appear in {max_seconds} s; giving up")
            return False
        time.sleep(0.05)
    return True


def raise_descriptor_limit(needed):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        new = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))


# ---------------------------------------------------------------------------------------------- hold


def open_one(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.settimeout(3)
        s.connect((host, port))
        s.sendall(PREFACE + EMPTY_SETTINGS)
        s.setblocking(False)
        return s
    except OSError:
        s.close()
        return None


def still_open(s):
    """Whether the server still holds this connection (it sends frames and never closes a held one)."""
    try:
        while True:  # drain what the server sent, so that its frames never fill our receive buffer
            data = s.recv(65536)
            if not data:
                return False  # the server closed it
    except BlockingIOError:
        return True
    except OSError:
        return False  # reset: closed with our preface unread


def hold(host, port, count, ready_file, stop_file, max_seconds=120.0):
    raise_descriptor_limit(count + 64)
    conns = [open_one(host, port) for _ in range(count)]
    opened = sum(c is not None for c in conns)
    say(f"opened {opened} of {count} connections to {host}:{port}")
    write_atomically(ready_file, f"opened={opened}\n")
    deadline = time.monotonic() + max_seconds
    reopened = 0
    last_held = -1
    most_held = 0
    next_refill = time.monotonic() + 1.0
    while not os.path.exists(stop_file) and time.monotonic() < deadline:
        time.sleep(0.05)
        if time.monotonic() < next_refill:
            continue
        next_refill = time.monotonic() + 1.0
        # Those still open a second after they were opened are the ones the server took and holds.
        held = [c is not None and still_open(c) for c in conns]
        most_held = max(most_held, sum(held))
        if sum(held) != last_held:
            say(f"the server holds {sum(held)} of them ({reopened} reopened so far)")
            last_held = sum(held)
        for i, c in enumerate(conns):
            if not held[i]:
                if c is not None:
                    c.close()
                conns[i] = open_one(host, port)
                reopened += 1
    for c in conns:
        if c is not None:
            c.close()
    say(f"closed all {count} ({reopened} reopened in all)")
    print(f"most_held={most_held}", flush=True)
    return 0


# ------------------------------------------------------------------------------------ stall-register


def request_record(kind, size):
    return REQUEST_MAGIC + struct.pack("<HHQQQ", 1, kind, size, 0, 0)


def task_states(pid):
    states = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        except (OSError, IndexError):
            pass  # a thread that just ended
    return states


def stop_process(pid):
    """SIGSTOP, then waits until every thread of `pid` is stopped."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while not all(state in "tT" for state in task_states(pid)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"process {pid} did not stop in 10 s: {task_states(pid)}")
        time.sleep(0.001)


def register(socket_path, fd, size, hand_over_pid=0):
    """Sends one registration with `fd` attached. Returns (code, text, seconds to the reply, connection,
    whether our own close of `fd` returned at once).

    With `hand_over_pid` (the server's pid) it hands the server the last reference to `fd`: the server is
    stopped (SIGSTOP) while the record is sent and our copy closed, so that it cannot close its copy first
    (ours would then be the last, and ours would block); SIGCONT lets it read the record. The reply is timed
    from there. A timer guards our close all the same: should it block, a signal ends the wait."""
    u = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    u.settimeout(10)
    u.connect(socket_path)
    closed_at_once = True
    if hand_over_pid:
        stop_process(hand_over_pid)
        try:
            socket.send_fds(u, [request_record(KIND_HOST_MEMORY, size)], [fd])
            signal.setitimer(signal.ITIMER_REAL, 0.5)
            t = time.monotonic()
            os.close(fd)
            signal.setitimer(signal.ITIMER_REAL, 0)
            closed_at_once = time.monotonic() - t < 0.25
        finally:
            os.kill(hand_over_pid, signal.SIGCONT)
        t0 = time.monotonic()
    else:
        t0 = time.monotonic()
        socket.send_fds(u, [request_record(KIND_HOST_MEMORY, size)], [fd])
    try:
        reply = u.recv(REPLY_BYTES)
    except socket.timeout:
        return None, "no reply within 10 s", time.monotonic() - t0, u, closed_at_once
    seconds = time.monotonic() - t0
    if len(reply) != REPLY_BYTES or reply[:4] != REPLY_MAGIC:
        return None, f"bad reply ({len(reply)} bytes)", seconds, u, closed_at_once
    _, code, length = struct.unpack_from("<HxxII", reply, 4)
    text = reply[16 : 16 + min(length, REPLY_BYTES - 16)].decode("ascii", "replace")
    return code, text, seconds, u, closed_at_once


def stalled_socket():
    """A connected TCP socket whose close blocks for 30 s: its peer (a listener that never accepts) reads
    nothing, its send queue is full, and SO_LINGER is on. Returns (listener, socket); keep the listener
    open for as long as the close should block."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(listener.getsockname())
    s.setblocking(False)
    chunk = b"\0" * 65536
    sent = 0
    while sent < (256 << 20):
        try:
            sent += s.send(chunk)
        except BlockingIOError:
            # Full for now: done once it stays full (loopback may open the window a little more).
            _, writable, _ = select.select([], [s], [], 0.2)
            if not writable:
                break
    s.setblocking(True)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 30))
    queued = struct.unpack("i", fcntl.ioctl(s.fileno(), TIOCOUTQ, b"\0\0\0\0"))[0]
    return listener, s, sent, queued


def sealed_memfd(size):
    fd = os.memfd_create("gpusort-e2e", os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
    os.ftruncate(fd, size)
    fcntl.fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK)
    return fd


def clean(text):
    return "".join(ch if ch.isalnum() or ch in " .,:;()_-/'" else "?" for ch in text)


def stall_register(socket_path, server_pid, result_file, stop_file, max_seconds=120.0):
    keep = []  # what must stay open until the stop file: the stalled socket's peer, the connections
    listener, s, sent, queued = stalled_socket()
    keep.append(listener)
    say(f"stalled socket: {sent} bytes sent, {queued} still queued, its peer never reads, SO_LINGER 30 s")
    code, text, seconds, u, closed_at_once = register(socket_path, s.detach(), 4096, hand_over_pid=server_pid)
    keep.append(u)
    say(f"stalled registration: code {code} in {seconds:.3f} s (from SIGCONT): {text}")
    if not closed_at_once:
        say("our own close of it blocked: we held the last reference, not the server")
    result = dict(stall_code=code, stall_reply_s=f"{seconds:.3f}", stall_text=clean(text), stall_queued=queued,
                  own_close_at_once=int(closed_at_once))
    fd = sealed_memfd(4096)
    code, text, seconds, u, _ = register(socket_path, fd, 4096)
    keep.append(u)
    say(f"memfd registration: code {code} in {seconds:.3f} s: {text}")
    result.update(memfd_code=code, memfd_reply_s=f"{seconds:.3f}", memfd_text=clean(text))
    write_atomically(result_file, "".join(f"{k}={v}\n" for k, v in result.items()))
    wait_for_file(stop_file, max_seconds)
    os.close(fd)
    for k in keep:
        k.close()
    say("done")
    return 0


def parse(argv):
    """(the subcommand's function, its arguments), or None for bad usage."""
    try:
        if len(argv) in (7, 8) and argv[1] == "hold":
            return hold, (argv[2], int(argv[3]), int(argv[4]), argv[5], argv[6], *map(float, argv[7:]))
        if len(argv) in (6, 7) and argv[1] == "stall-register":
            return stall_register, (argv[2], int(argv[3]), argv[4], argv[5], *map(float, argv[6:]))
    except ValueError:
        pass
    return None


def main(argv):
    parsed = parse(argv)
    if parsed is None:
        print(__doc__, file=sys.stderr)
        return 2
    signal.signal(signal.SIGALRM, lambda *_: None)  # the guard on our own close (register)
    function, args = parsed
    return function(*args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
