# Sourced by the shell tests here when a tool they need is missing. In CI (CI set, as .ci/run runs) that
# is a broken install, since scripts/install-deps.sh installs every one of them: fail loudly. By hand
# (someone who has not run install-deps), skip with exit 77, which ctest reports as skipped.
missing_dep() {
  if [ -n "${CI:-}" ] && [ "${CI:-}" != false ] && [ "${CI:-}" != 0 ]; then
    echo "FAIL: $1 is missing; scripts/install-deps.sh installs it (CI must not skip this check)" >&2
    exit 1
  fi
  echo "SKIP: $1 is missing; run scripts/install-deps.sh to install it"
  exit 77
}
need() { for tool in "$@"; do command -v "$tool" >/dev/null || missing_dep "$tool"; done; }
