"""Processes for the deploy tests: gpusort-server on loopback ports it picks itself, the gpusort CLI, and
a child-process helper that never outlives the test (a ctest timeout kills the test with SIGKILL, which
no trap sees: the kernel's parent-death signal still stops the children)."""
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def missing_dep(what):
    """A tool is missing: in CI (scripts/install-deps.sh installs them all) a broken install, so fail
    loudly; by hand, skip with ctest's skip code (77). Same rule as require.sh."""
    if os.environ.get("CI", "") not in ("", "0", "false"):
        print(f"FAIL: {what} is missing; scripts/install-deps.sh installs it (CI must not skip this check)",
              file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: {what} is missing; run scripts/install-deps.sh to install it")
    sys.exit(77)


def require(*tools, modules=()):
    for tool in tools:
        if not shutil.which(tool):
            missing_dep(tool)
    for module in modules:
        try:
            __import__(module)
        except ImportError:
            missing_dep(f"python module {module}")


def exit_on_sigterm():
    """SIGTERM (ctest, a CI runner) runs the tests' finally blocks instead of killing them mid-way."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def spawn(argv, log_path):
    with open(log_path, "w") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                preexec_fn=_die_with_parent)


def stop(proc, timeout=30):
    """SIGTERM, then SIGKILL after timeout seconds; the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def tail(path, lines=30):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Server:
    """gpusort-server with --listen/--metrics-listen on 127.0.0.1:0; ports read from its --port-file."""

    def __init__(self, bin_dir, work, backend=None, extra=()):
        self.bin_dir, self.work = Path(bin_dir), Path(work)
        self.backend = backend or os.environ.get("GPUSORT_E2E_BACKEND", "cpu")
        self.extra = list(extra)
        self.log = self.work / "server.log"

    def __enter__(self):
        port_file = self.work / "ports"
        self.proc = spawn([str(self.bin_dir / "gpusort-server"), "--backend", self.backend,
                           "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                           "--port-file", str(port_file), *self.extra], self.log)
        deadline = time.monotonic() + 60  # a loaded 2-core CI machine, or a GPU's first context
        while time.monotonic() < deadline:
            if port_file.exists() and "metrics_port=" in port_file.read_text():
                ports = dict(line.split("=", 1) for line in port_file.read_text().split())
                self.grpc = f"127.0.0.1:{ports['grpc_port']}"
                self.metrics = f"127.0.0.1:{ports['metrics_port']}"
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        stop(self.proc)
        raise RuntimeError(f"gpusort-server did not start:\n{tail(self.log)}")

    def __exit__(self, *exc):
        rc = stop(self.proc)
        if exc[0] is None and rc != 0:
            raise RuntimeError(f"gpusort-server exited {rc} on SIGTERM:\n{tail(self.log)}")

    def cli(self, *args, ok=True):
        """Runs the gpusort CLI against this server; its exit code."""
        r = subprocess.run([str(self.bin_dir / "gpusort"), *args, "--server", self.grpc], capture_output=True,
                           text=True, timeout=120, preexec_fn=_die_with_parent)
        if ok and r.returncode != 0:
            raise RuntimeError(f"gpusort {' '.join(args)}: exit {r.returncode}: {r.stderr}")
        return r.returncode

    def gen(self, path, dtype, count, seed=1):
        r = subprocess.run([str(self.bin_dir / "gpusort"), "gen", "--dtype", dtype, "--count", str(count),
                            "--seed", str(seed), "--out", str(path)], capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"gpusort gen: {r.stderr}")
        return path
