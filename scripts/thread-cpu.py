#!/usr/bin/env python3
"""Where a process's CPU time goes, by thread name, over a window: cores busy per name.

  scripts/thread-cpu.py PID [SECONDS]      (default 5)

Reads /proc/PID/task/*/stat at the start and the end of the window and prints, for each thread name
(the server names its own threads "gs-...", server/core/thread_name.h; gRPC, TBB and CUDA name theirs),
the threads seen and the cores they kept busy (user + system time over the window). Threads that
started or ended inside the window count from when they were seen. Python 3 standard library only.
"""
import os
import sys
import time


def sample(pid):
    """{tid: (name, user + system clock ticks)} for every thread of pid now."""
    out = {}
    task_dir = f"/proc/{pid}/task"
    for tid in os.listdir(task_dir):
        try:
            with open(f"{task_dir}/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # ended between the listing and the read
        # "tid (name) state ...": the name may hold spaces and parentheses, so split at the last ")".
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        out[tid] = (name, int(fields[11]) + int(fields[12]))  # utime, stime: fields 14 and 15 of stat
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    pid, seconds = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    hz = os.sysconf("SC_CLK_TCK")
    before = sample(pid)
    start = time.monotonic()
    time.sleep(seconds)
    after = sample(pid)
    window = time.monotonic() - start
    by_name = {}
    for tid, (name, ticks) in after.items():
        used = ticks - before.get(tid, (name, 0))[1] if tid in before else ticks
        threads, total = by_name.get(name, (0, 0))
        by_name[name] = (threads + 1, total + used)
    all_cores = sum(t for _, t in by_name.values()) / hz / window
    print(f"pid {pid}: {all_cores:.2f} cores over {window:.1f} s")
    for name, (threads, ticks) in sorted(by_name.items(), key=lambda kv: -kv[1][1]):
        cores = ticks / hz / window
        if cores >= 0.005:
            print(f"  {name:<16} {threads:4d} threads  {cores:6.2f} cores")


if __name__ == "__main__":
    main()
