#!/usr/bin/env python3
"""What a process's threads are doing, by thread name, sampled over a window: running, or which system
call they wait in (futex: a lock or a condition; ioctl: the GPU driver; sched_yield: a poll's yield).

  scripts/thread-syscalls.py PID [SECONDS [HZ]]      (default 5 s at 200 samples a second)

Reads /proc/PID/task/*/syscall HZ times a second (root, or the process's own user with ptrace allowed).
thread-cpu.py says how many cores each name keeps busy; this says what the rest of their time is: where
a loaded server's call threads queue on a lock, for instance, instead of on the GPU. Each name's line
gives the share of its samples in each state, most first. Python 3 standard library only.
"""
import collections
import os
import sys
import time

# x86-64 system call numbers of the waits a server's threads sit in; any other shows as its number.
SYSCALLS = {
    0: "read", 1: "write", 7: "poll", 9: "mmap", 10: "mprotect", 11: "munmap", 16: "ioctl", 19: "readv",
    20: "writev", 23: "select", 24: "sched_yield", 35: "nanosleep", 44: "sendto", 45: "recvfrom",
    46: "sendmsg", 47: "recvmsg", 61: "wait4", 128: "rt_sigtimedwait", 202: "futex", 228: "clock_gettime",
    230: "clock_nanosleep", 232: "epoll_wait", 233: "epoll_ctl", 270: "pselect6", 271: "ppoll", 281: "epoll_pwait",
    441: "epoll_pwait2",
}


def state_of(text):
    """'running', a system call's name, or '?' from one read of a thread's syscall file."""
    first = text.split(" ", 1)[0].strip()
    if first == "running":
        return "running"
    try:
        number = int(first)
    except ValueError:
        return "?"
    if number < 0:
        return "blocked outside a call"
    return SYSCALLS.get(number, f"syscall {number}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    pid = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    hz = float(sys.argv[3]) if len(sys.argv) > 3 else 200.0
    task_dir = f"/proc/{pid}/task"
    names = {}
    counts = collections.defaultdict(collections.Counter)  # name -> state -> samples
    threads = collections.defaultdict(set)
    deadline = time.monotonic() + seconds
    next_sample = time.monotonic()
    while time.monotonic() < deadline:
        for tid in os.listdir(task_dir):
            try:
                if tid not in names:
                    with open(f"{task_dir}/{tid}/comm") as f:
                        names[tid] = f.read().strip()
                with open(f"{task_dir}/{tid}/syscall") as f:
                    state = state_of(f.read())
            except OSError:
                continue  # ended between the listing and the read, or not ours to read
            counts[names[tid]][state] += 1
            threads[names[tid]].add(tid)
        next_sample += 1.0 / hz
        time.sleep(max(0.0, next_sample - time.monotonic()))
    total = collections.Counter()
    for name in counts:
        total.update(counts[name])
    rows = [("all", len(names), total)] + sorted(
        ((name, len(threads[name]), c) for name, c in counts.items()), key=lambda row: -sum(row[2].values()))
    print(f"pid {pid}: {seconds:.1f} s at {hz:.0f} samples a second")
    for name, n, c in rows:
        samples = sum(c.values())
        shares = ", ".join(f"{state} {100.0 * k / samples:.0f}%" for state, k in c.most_common(6))
        print(f"  {name:<16} {n:4d} threads  {shares}")


if __name__ == "__main__":
    main()
