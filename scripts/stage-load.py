#!/usr/bin/env python3
"""Where a server's calls spend their time over a window, from its /metrics: for each stage, the calls
that passed it a second, their mean time in it, and how many calls were in it on average (the stage's
seconds per second of the window: Little's law); then the requests each GPU served.

  scripts/stage-load.py METRICS_URL [SECONDS]      (default 5; e.g. http://127.0.0.1:9464/metrics)

The stages are the server's own (server/core/stage.h, gpusort_stage_duration_seconds), summed over
methods. "in server" is gpusort_request_duration_seconds: a call from its arrival to its reply, so the
stages of a call add up to at most that. Python 3 standard library only.
"""
import re
import sys
import time
import urllib.request

SAMPLE = re.compile(r'^(\w+)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def scrape(url):
    """{(metric, frozenset(labels)): value} for every sample."""
    out = {}
    with urllib.request.urlopen(url, timeout=5) as response:
        for line in response.read().decode().splitlines():
            match = SAMPLE.match(line)
            if not match:
                continue
            labels = frozenset(LABEL.findall(match.group(2) or ""))
            out[(match.group(1), labels)] = float(match.group(3))
    return out


def summed(delta, metric, key):
    """Sums delta's samples of metric by the value of label key."""
    out = {}
    for (name, labels), value in delta.items():
        if name != metric:
            continue
        by = dict(labels).get(key, "")
        out[by] = out.get(by, 0.0) + value
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    url, seconds = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
    before = scrape(url)
    start = time.monotonic()
    time.sleep(seconds)
    after = scrape(url)
    window = time.monotonic() - start
    delta = {k: v - before.get(k, 0.0) for k, v in after.items()}
    calls = sum(summed(delta, "gpusort_request_duration_seconds_count", "method").values())
    in_server = sum(summed(delta, "gpusort_request_duration_seconds_sum", "method").values())
    print(f"{calls / window:.0f} calls/s over {window:.1f} s; in server {in_server / window:.1f} calls on average, "
          f"{1e3 * in_server / max(calls, 1):.3f} ms each")
    counts = summed(delta, "gpusort_stage_duration_seconds_count", "stage")
    sums = summed(delta, "gpusort_stage_duration_seconds_sum", "stage")
    for stage in sorted(sums, key=lambda s: -sums[s]):
        if counts.get(stage, 0) > 0:
            print(f"  {stage:<14} {counts[stage] / window:8.0f}/s  {1e3 * sums[stage] / counts[stage]:8.3f} ms  "
                  f"{sums[stage] / window:6.2f} in it")
    for device, served in sorted(summed(delta, "gpusort_device_requests_total", "device").items()):
        print(f"  GPU {device}: {served / window:.0f} requests/s")


if __name__ == "__main__":
    main()
