#!/usr/bin/env bash
# yamllint over every YAML file of deploy/ and of these tests.
# usage: yaml_lint_test.sh SOURCE_DIR
set -euo pipefail
src=$1
here=$(dirname "$0")
. "$here/require.sh"
need yamllint
cd "$src"
mapfile -t files < <(find deploy tests/deploy -path '*/node_modules' -prune -o \( -name '*.yaml' -o -name '*.yml' \) -print | sort)
[ ${#files[@]} -gt 0 ] || { echo "FAIL: no YAML files found under deploy/" >&2; exit 1; }
yamllint --strict -c tests/deploy/yamllint.yaml "${files[@]}"
echo "yamllint: ${#files[@]} files clean"
