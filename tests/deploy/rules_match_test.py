#!/usr/bin/env python3
"""deploy/kubernetes/prometheusrule.yaml must carry exactly the groups of
deploy/prometheus/gpusort-alerts.yml: the Operator's copy of the rules cannot drift from the file that
promtool checks and tests. usage: rules_match_test.py SOURCE_DIR"""
import sys
from pathlib import Path

import yaml

src = Path(sys.argv[1])
plain = yaml.safe_load((src / "deploy/prometheus/gpusort-alerts.yml").read_text())
operator = yaml.safe_load((src / "deploy/kubernetes/prometheusrule.yaml").read_text())
if plain["groups"] != operator["spec"]["groups"]:
    a = {r.get("alert"): r for g in plain["groups"] for r in g["rules"]}
    b = {r.get("alert"): r for g in operator["spec"]["groups"] for r in g["rules"]}
    for name in sorted(set(a) | set(b), key=str):
        if a.get(name) != b.get(name):
            print(f"FAIL: rule {name} differs:\n  gpusort-alerts.yml:  {a.get(name)}\n"
                  f"  prometheusrule.yaml: {b.get(name)}", file=sys.stderr)
    print("FAIL: prometheusrule.yaml spec.groups != gpusort-alerts.yml groups (edit both)", file=sys.stderr)
    sys.exit(1)
print(f"PrometheusRule matches gpusort-alerts.yml ({sum(len(g['rules']) for g in plain['groups'])} rules)")
