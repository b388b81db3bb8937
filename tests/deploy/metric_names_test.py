#!/usr/bin/env python3
"""Every metric the Grafana dashboard and the alert rules name is one gpusort-server exports, with the
labels they match on: a renamed metric or label fails here instead of leaving an empty panel or an alert
that can never fire. Also: every query parses (promtool). How: start a server (CPU backend unless
GPUSORT_E2E_BACKEND says otherwise), send a Sort, a TopK and a refused call so that every labelled
family has samples, scrape /metrics, and compare.

gpusort_device_memory_bytes comes only from the CUDA backend; on a CPU server it must be declared in
server/service/metrics.cc instead (on a CUDA server, GPUSORT_E2E_BACKEND=cuda, it must be exported).
usage: metric_names_test.py SOURCE_DIR BUILD_BIN_DIR"""
import re
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import deploy_queries  # noqa: E402
import server_fixture  # noqa: E402

# Series that Prometheus itself makes for every target, and their labels.
PROMETHEUS_MADE = {"up": {"job", "instance"}}
# Labels Prometheus adds to every scraped series.
TARGET_LABELS = {"job", "instance"}
# Families only the CUDA backend fills, and their labels.
CUDA_ONLY = {"gpusort_device_memory_bytes": {"device", "kind"}}


def exposition_labels(text):
    """{sample name: {label names}} of a Prometheus text exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s", line)
        if m:
            labels = set(re.findall(r'([a-zA-Z_]\w*)="', m.group(3) or ""))
            out.setdefault(m.group(1), set()).update(labels)
    return out


def check_syntax(queries, work):
    """promtool parses each query as a recording rule's expr (it has no parse-only command)."""
    groups = [{"name": "parse", "rules": [{"record": f"deploy_check:query_{i}", "expr": deploy_queries.to_promql(q)}
                                          for i, (_, q) in enumerate(queries)]}]
    import yaml
    path = Path(work) / "queries.yml"
    path.write_text(yaml.safe_dump({"groups": groups}))
    r = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True)
    if r.returncode == 0:
        return []
    # promtool names the rule; name the query instead.
    return [f"{where} does not parse: {q}" for i, (where, q) in enumerate(queries)
            if f'"deploy_check:query_{i}"' in r.stdout + r.stderr] or [f"promtool:\n{r.stdout}{r.stderr}"]


def main():
    src, bin_dir = Path(sys.argv[1]), Path(sys.argv[2])
    server_fixture.require("promtool", modules=["yaml"])
    server_fixture.exit_on_sigterm()
    queries = deploy_queries.dashboard_queries(src) + deploy_queries.rule_queries(src)
    if len(queries) < 10:
        print(f"FAIL: only {len(queries)} queries found in the dashboard and the rules", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as work:
        failures = check_syntax(queries, work)
        with server_fixture.Server(bin_dir, work) as server:
            keys = server.gen(Path(work) / "k.npy", "f32", 5000)
            server.cli("sort", "--in", str(keys), "--out", str(Path(work) / "s.npy"))
            server.cli("topk", "--in", str(keys), "-k", "10", "--out", str(Path(work) / "t.npy"))
            server.cli("topk", "--in", str(keys), "-k", "6000", "--out", str(Path(work) / "x.npy"), ok=False)
            with urllib.request.urlopen(f"http://{server.metrics}/metrics", timeout=30) as r:
                exported = exposition_labels(r.read().decode())
        backend = server.backend
    declared = set(re.findall(r'\.Name\("([a-zA-Z_:][\w:]*)"\)', (src / "server/service/metrics.cc").read_text()))

    used = {}
    for where, q in queries:
        in_query = set()  # the labels of every metric the query selects
        for name, labels in deploy_queries.selectors(deploy_queries.to_promql(q)):
            if name in exported:
                known = exported[name] | TARGET_LABELS
            elif name in PROMETHEUS_MADE:
                known = PROMETHEUS_MADE[name]
            elif name in CUDA_ONLY and backend != "cuda":
                if name not in declared:
                    failures.append(f"{where}: {name} is not declared in server/service/metrics.cc")
                    continue
                known = CUDA_ONLY[name] | TARGET_LABELS
            else:
                failures.append(f"{where}: metric {name} is not exported by gpusort-server ({backend} backend)")
                continue
            if labels - known:
                failures.append(f"{where}: {name} has no label {sorted(labels - known)} (it has {sorted(known)})")
            used.setdefault(name, set()).add(where)
            in_query |= known
        # by (...), on (...) and the like: each label must be on one of the metrics (le: histogram buckets).
        missing = deploy_queries.grouping_labels(q) - in_query - {"le"}
        if missing and in_query:
            failures.append(f"{where}: groups or matches on {sorted(missing)}, which no metric of it has")

    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    if failures:
        return 1
    families = {re.sub(r"_(bucket|sum|count)$", "", n) for n in exported if n.startswith("gpusort_")}
    unused = sorted(f for f in families if not any(u == f or u.startswith(f + "_") for u in used))
    print(f"metric names: {len(queries)} queries use {len(used)} series names, all exported ({backend} backend)")
    if unused:
        print(f"note: exported but on no panel or rule: {', '.join(unused)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
