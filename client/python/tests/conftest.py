"""A gpusort server for the tests: $GPUSORT_TEST_SERVER (host:port) when set, else the checkout's
gpusort-server ($GPUSORT_SERVER_BIN, or build/bin/gpusort-server) started on the CPU backend (or
$GPUSORT_TEST_BACKEND: cuda on a GPU machine) on a free port, stopped after the session. The package is imported from the checkout (stubs generated first)."""
import os
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
sys.path.insert(0, PACKAGE_ROOT)
import build_protos  # noqa: E402

build_protos.generate(PACKAGE_ROOT)


def _server_binary():
    explicit = os.environ.get("GPUSORT_SERVER_BIN")
    if explicit:
        return explicit
    return os.path.join(PACKAGE_ROOT, "..", "..", "build", "bin", "gpusort-server")


_SHM = {}


@pytest.fixture(scope="session")
def shm_socket(server_target):
    """The started server's --shm-socket (skips against $GPUSORT_TEST_SERVER, whose socket is unknown)."""
    if "path" not in _SHM:
        pytest.skip("the server under test was not started here: its --shm-socket is unknown")
    return _SHM["path"]


@pytest.fixture(scope="session")
def server_metrics(server_target):
    """A function returning the started server's /metrics text (skips against $GPUSORT_TEST_SERVER)."""
    if "metrics_port" not in _SHM:
        pytest.skip("the server under test was not started here: its metrics port is unknown")
    import urllib.request

    def scrape():
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % _SHM["metrics_port"], timeout=10) as reply:
            return reply.read().decode()

    return scrape


class StartedServer:
    """A gpusort-server of the checkout, started on a free port (CPU backend unless
    $GPUSORT_TEST_BACKEND), with its shared-memory socket and metrics port; stop() ends it."""

    def __init__(self):
        binary = _server_binary()
        if not os.path.exists(binary):
            pytest.skip("no gpusort-server at %s (set GPUSORT_SERVER_BIN)" % binary)
        work = tempfile.mkdtemp(prefix="gpusort-py-")
        port_file = os.path.join(work, "port")
        self.shm_socket = os.path.join(work, "shm.sock")
        self.metrics_port = None
        args = [binary, "--backend", os.environ.get("GPUSORT_TEST_BACKEND", "cpu"), "--listen", "127.0.0.1:0",
                "--metrics-listen", "127.0.0.1:0", "--port-file", port_file, "--log-level", "warn", "--shm-socket",
                self.shm_socket, "--data-port", "0"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "log"), "w"))
        port = None
        for _ in range(300):
            if os.path.exists(port_file):
                for line in open(port_file):
                    if line.startswith("grpc_port="):
                        port = int(line.split("=")[1])
                    if line.startswith("metrics_port="):
                        self.metrics_port = int(line.split("=")[1])
            if port or self.process.poll() is not None:
                break
            time.sleep(0.05)
        if not port:
            self.stop()
            raise RuntimeError("gpusort-server did not start: " + open(os.path.join(work, "log")).read())
        self.target = "127.0.0.1:%d" % port

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


@pytest.fixture(scope="session")
def server_target():
    if os.environ.get("GPUSORT_TEST_SERVER"):
        yield os.environ["GPUSORT_TEST_SERVER"]
        return
    server = StartedServer()
    _SHM["path"] = server.shm_socket
    if server.metrics_port:
        _SHM["metrics_port"] = server.metrics_port
    try:
        yield server.target
    finally:
        server.stop()


@pytest.fixture(scope="session")
def second_server():
    """Another server of the checkout (tests of a fleet: gpusort.dask)."""
    server = StartedServer()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def client(server_target):
    import gpusort

    with gpusort.Client(server_target, timeout=120) as c:
        yield c
