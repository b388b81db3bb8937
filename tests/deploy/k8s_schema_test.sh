#!/usr/bin/env bash
# The Kubernetes manifests against the API schema, offline (validate_k8s.mjs says how). The npm packages
# come from scripts/install-deps.sh (npm ci into tests/deploy/node_modules, pinned by package-lock.json).
# usage: k8s_schema_test.sh SOURCE_DIR
set -euo pipefail
src=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/require.sh"
need node
for pkg in kubernetes-models @kubernetes-models/prometheus-operator typescript yaml; do
  [ -f "$here/node_modules/$pkg/package.json" ] || missing_dep "npm package $pkg (tests/deploy/node_modules)"
done
node "$here/validate_k8s.mjs" "$src/deploy/kubernetes" "$src/deploy/kubernetes-secure" "$src/deploy/kubernetes-dask"
