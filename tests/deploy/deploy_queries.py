"""The PromQL that deploy/ holds: every query of the Grafana dashboard (panels and variables) and every
alert rule's expr, and the metric selectors each one uses (metric name and the label names it matches
on). Shared by metric_names_test.py and prometheus_e2e_test.py."""
import json
import re
from pathlib import Path

DASHBOARD = "deploy/grafana/gpusort-dashboard.json"
RULES = "deploy/prometheus/gpusort-alerts.yml"

# Words of PromQL that look like metric names but are not: keywords, and the aggregation operators (which
# may stand apart from their parenthesis: "sum by (job) (...)").
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
             "offset", "atan2", "inf", "nan", "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
             "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}


def _panels(panels):
    for p in panels:
        yield p
        yield from _panels(p.get("panels", []))


def dashboard_queries(src):
    """[(where, promql)] with Grafana's variables still in."""
    dash = json.loads((Path(src) / DASHBOARD).read_text())
    out = []
    for p in _panels(dash.get("panels", [])):
        for t in p.get("targets", []):
            if t.get("expr"):
                out.append((f"dashboard panel '{p.get('title')}' {t.get('refId')}", t["expr"]))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else (q or "")
        # label_values(selector, label) asks Prometheus for the series of selector: that part is PromQL.
        m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", q, re.S)
        if m:
            out.append((f"dashboard variable '{v.get('name')}'", m.group(1)))
        elif q.strip() and not re.fullmatch(r"\s*label_values\(\s*\w+\s*\)\s*", q):
            out.append((f"dashboard variable '{v.get('name')}'", q))
    return out


def rule_queries(src):
    import yaml  # python3-yaml; the tests check for it first (server_fixture.require)
    groups = yaml.safe_load((Path(src) / RULES).read_text())["groups"]
    return [(f"rule {r.get('alert') or r.get('record')}", r["expr"]) for g in groups for r in g["rules"]]


def to_promql(expr, interval="5m", job="gpusort", instance=".*"):
    """Grafana's variables replaced by values, so that Prometheus or promtool can read the query."""
    expr = re.sub(r"\$__(rate_interval|interval|range)\b", interval, expr)
    expr = re.sub(r"\$\{?job\}?", job, expr)
    return re.sub(r"\$\{?instance\}?", instance, expr)


def selectors(expr):
    """[(metric name, {label names matched})] of every vector selector in expr."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)  # strings cannot hold names
    s = re.sub(r"\[[^\]]*\]", "", s)  # range and subquery durations
    # Label lists of grouping and vector matching: label names, not metrics.
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", s)
    out = []
    for m in re.finditer(r"(?<![\w.:$])([a-zA-Z_:][\w:]*)\s*(\{[^}]*\})?\s*(\()?", s):
        name, matchers, call = m.group(1), m.group(2), m.group(3)
        if call and not matchers:
            continue  # a function or an aggregation
        if name.lower() in _KEYWORDS:
            continue
        labels = set(re.findall(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", matchers or ""))
        out.append((name, labels))
    return out


def grouping_labels(expr):
    """Label names of the by/without/on/ignoring/group_left/group_right lists in expr."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    lists = re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", s)
    return {label.strip() for lst in lists for label in lst.split(",") if label.strip()}
