#!/usr/bin/env bash
# The alert rules: promtool parses them and the Prometheus config that loads them, its unit tests make
# every alert fire on the series it is written for (alerts_test.yml), and the Operator's PrometheusRule
# holds the same rules.
# usage: alert_rules_test.sh SOURCE_DIR
set -euo pipefail
src=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/require.sh"
need promtool python3
python3 -c 'import yaml' 2>/dev/null || missing_dep "python3-yaml"
promtool check config "$src/deploy/prometheus/prometheus.yml"
promtool check rules "$src/deploy/prometheus/gpusort-alerts.yml"
(cd "$here" && promtool test rules alerts_test.yml)
python3 "$here/rules_match_test.py" "$src"
echo "alert rules: OK"
