#!/usr/bin/env python3
"""A real Prometheus (Debian's) scrapes a real gpusort-server through deploy/prometheus/prometheus.yml
(target and intervals rewritten, the alert rules loaded), and its HTTP API must show exactly the calls
sent: request and key counters, the latency histogram's count, +Inf bucket and sum. Then every alert rule
evaluates without error and none fires, and every dashboard query runs.
Everything on loopback, ports picked free, bounded waits, children stopped on any exit.
usage: prometheus_e2e_test.py SOURCE_DIR BUILD_BIN_DIR"""
import json
import math
import socket
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import deploy_queries  # noqa: E402
import server_fixture  # noqa: E402

WAIT = 120  # seconds, for each thing awaited: generous for a loaded 2-core CI machine, yet bounded


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


class Prometheus:
    def __init__(self, src, work, target):
        self.src, self.work, self.target = Path(src), Path(work), target

    def __enter__(self):
        import yaml
        config = yaml.safe_load((self.src / "deploy/prometheus/prometheus.yml").read_text())
        config["global"].update(scrape_interval="1s", evaluation_interval="1s", scrape_timeout="1s")
        config["rule_files"] = [str((self.src / "deploy/prometheus" / f).resolve()) for f in config["rule_files"]]
        [job] = [j for j in config["scrape_configs"] if j["job_name"] == "gpusort"]
        job["static_configs"] = [{"targets": [self.target]}]
        (self.work / "prometheus.yml").write_text(yaml.safe_dump(config))
        for attempt in range(3):  # a free port can be taken between our check and Prometheus' bind
            self.url = f"http://127.0.0.1:{free_port()}"
            self.log = self.work / f"prometheus-{attempt}.log"
            self.proc = server_fixture.spawn(
                ["prometheus", f"--config.file={self.work / 'prometheus.yml'}",
                 f"--storage.tsdb.path={self.work / f'data-{attempt}'}",
                 f"--web.listen-address={self.url[7:]}", "--log.level=warn"], self.log)
            deadline = time.monotonic() + WAIT
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    if get(f"{self.url}/-/ready", timeout=2)[0] == 200:
                        return self
                except OSError:
                    pass
                time.sleep(0.2)
            server_fixture.stop(self.proc)
        raise RuntimeError(f"Prometheus did not become ready:\n{server_fixture.tail(self.log)}")

    def __exit__(self, *exc):
        server_fixture.stop(self.proc)

    def api(self, path, **params):
        status, body = get(f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}")
        reply = json.loads(body)
        if reply.get("status") != "success":
            raise RuntimeError(f"{path} {params}: {reply}")
        return reply["data"]

    def query(self, promql):
        """{frozenset(labels): value} of an instant query."""
        data = self.api("query", query=promql)
        if data["resultType"] == "scalar":
            return {frozenset(): float(data["result"][1])}
        return {frozenset(s["metric"].items()): float(s["value"][1]) for s in data["result"]}

    def wait_for(self, promql, expected, what):
        """Polls until the query's single value is expected; the last value otherwise."""
        deadline, value = time.monotonic() + WAIT, None
        while time.monotonic() < deadline:
            result = self.query(promql)
            value = next(iter(result.values())) if len(result) == 1 else result
            if value == expected:
                return
            time.sleep(0.5)
        raise AssertionError(f"{what}: {promql} = {value} after {WAIT} s, expected {expected}")


def main():
    src, bin_dir = Path(sys.argv[1]), Path(sys.argv[2])
    server_fixture.require("prometheus", modules=["yaml"])
    server_fixture.exit_on_sigterm()
    failures = []

    def check(ok, message):
        if not ok:
            failures.append(message)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with server_fixture.Server(bin_dir, work) as server, Prometheus(src, work, server.metrics) as prom:
            prom.wait_for('up{job="gpusort"}', 1.0, "the server's target is up")
            # Calls of known sizes: 3 Sorts, 2 TopKs, 1 TopK refused (k larger than the row).
            sorts = [("u32", 1000), ("f32", 2500), ("i64", 4000)]
            topks = [("f32", 3000), ("u64", 3000)]
            for i, (dtype, n) in enumerate(sorts):
                keys = server.gen(work / f"s{i}.npy", dtype, n, seed=i + 1)
                server.cli("sort", "--in", str(keys), "--out", str(work / "out.npy"))
            for i, (dtype, n) in enumerate(topks):
                keys = server.gen(work / f"t{i}.npy", dtype, n, seed=i + 7)
                server.cli("topk", "--in", str(keys), "-k", "10", "--out", str(work / "out.npy"))
            check(server.cli("topk", "--in", str(work / "t0.npy"), "-k", "3001", "--out", str(work / "x.npy"),
                             ok=False) != 0, "the CLI accepted k larger than the row")
            calls = {"Sort": len(sorts), "TopK": len(topks) + 1}

            prom.wait_for("sum(gpusort_requests_total)", float(sum(calls.values())), "every call was scraped")
            by = lambda q: {dict(k).get("method", dict(k).get("code")): v for k, v in prom.query(q).items()}  # noqa
            ok = by('sum by (method) (gpusort_requests_total{code="OK"})')
            check(ok == {"Sort": float(len(sorts)), "TopK": float(len(topks))}, f"OK calls by method: {ok}")
            codes = by("sum by (code) (gpusort_requests_total)")
            check(codes == {"OK": float(len(sorts) + len(topks)), "INVALID_ARGUMENT": 1.0}, f"calls by code: {codes}")
            keys = by("sum by (method) (gpusort_keys_total)")
            check(keys == {"Sort": float(sum(n for _, n in sorts)), "TopK": float(sum(n for _, n in topks))},
                  f"keys by method: {keys}")
            # The histogram: one observation per call (refused ones too), all in the +Inf bucket and all
            # under the largest finite bound (120 s), and a positive sum below count x 120 s.
            count = by("sum by (method) (gpusort_request_duration_seconds_count)")
            check(count == {m: float(n) for m, n in calls.items()}, f"latency histogram count: {count}")
            inf = by('sum by (method) (gpusort_request_duration_seconds_bucket{le="+Inf"})')
            check(inf == count, f"+Inf bucket {inf} != count {count}")
            top = by('sum by (method) (gpusort_request_duration_seconds_bucket{le="120.0"})') or \
                by('sum by (method) (gpusort_request_duration_seconds_bucket{le="120"})')
            check(top == count, f"le=120 bucket {top} != count {count}")
            total = by("sum by (method) (gpusort_request_duration_seconds_sum)")
            check(all(0 < total.get(m, 0) < 120 * n for m, n in calls.items()), f"latency sum: {total}")
            p50 = by("histogram_quantile(0.5, sum by (method, le) (gpusort_request_duration_seconds_bucket))")
            check(set(p50) == set(calls) and all(0 < v <= 120 and not math.isnan(v) for v in p50.values()),
                  f"median latency from the histogram: {p50}")
            stages = by("count(gpusort_stage_duration_seconds_count)")
            check(bool(stages), "no per-stage histogram")

            # The alert rules: loaded, evaluated without error, none firing on a healthy server.
            deadline = time.monotonic() + WAIT
            while True:
                rules = [r for g in prom.api("rules")["groups"] for r in g["rules"]]
                if rules and all(r.get("lastEvaluation", "").startswith("2") and r["health"] != "unknown"
                                 for r in rules) or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            expected = len(deploy_queries.rule_queries(src))
            check(len(rules) == expected, f"Prometheus loaded {len(rules)} rules, the file has {expected}")
            for r in rules:
                check(r["health"] == "ok", f"rule {r['name']}: health {r['health']} {r.get('lastError', '')}")
            firing = [a["labels"]["alertname"] for a in prom.api("alerts")["alerts"] if a["state"] == "firing"]
            check(not firing, f"alerts firing on a healthy server: {firing}")

            # Every dashboard query runs (what promtool's parse cannot see: label matching, types).
            time.sleep(3)  # two scrapes after the calls, so that rate() has points
            empty = []
            for where, q in deploy_queries.dashboard_queries(src):
                try:
                    if not prom.query(deploy_queries.to_promql(q, interval="1m")):
                        empty.append(where)
                except RuntimeError as e:
                    failures.append(f"{where}: {e}")
            # Traffic and latency panels must show these calls (device memory: CUDA only).
            for where in empty:
                check("Device" in where, f"{where}: no data after the calls")

    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    if failures:
        return 1
    print(f"prometheus e2e: counters, histogram and {expected} rules as expected; dashboard queries run "
          f"({len(empty)} empty: {', '.join(empty) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
