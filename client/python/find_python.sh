# Sourced by run_tests.sh and run_mypy.sh: sets $python to the first python3 that imports every module
# named in $1 (Debian's packages are built for /usr/bin/python3, which a pyenv or venv python3 earlier on
# PATH may hide), or prints "SKIP: $2" and exits 77 (ctest: skipped) when none does.
python=
for candidate in /usr/bin/python3 "$(command -v python3 || true)"; do
  [ -n "$candidate" ] && [ -x "$candidate" ] || continue
  if "$candidate" -c "import $1" 2>/dev/null; then python=$candidate; break; fi
done
if [ -z "$python" ]; then
  echo "SKIP: $2"
  exit 77
fi
