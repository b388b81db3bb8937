"""Which gpusort server a Dask worker's tasks call, chosen once per worker process.

A fleet of gpusort servers (a list of targets, or one Service name that resolves to every replica) is
described by a Servers value, which travels inside the graph. On a worker, the first task that needs a
server picks one: a server on the worker's own host if there is one (several: spread by the worker's
address), with its shared-memory socket where Servers names one and it exists here; else any; and
before all of them the server a deployment names for the worker's node ($GPUSORT_NODE_SERVER). The
Client is kept for the worker's later tasks. A call that finds its server gone (UNAVAILABLE, or
DEADLINE_EXCEEDED) marks it down in this process for `down_seconds` and goes to the next server; with
none left it raises gpusort's error, the task fails, and Dask's retries (the graphs ask for `retries`
where Dask keeps the annotation; Client.compute(..., retries=N) always) try again later.
"""
import hashlib
import os
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

import numpy as np

from .._client import Client
from ..errors import DeadlineExceededError, UnavailableError


class Servers:
    """gpusort servers for Dask tasks: `targets` (host:port strings, or one name such as a headless
    Service's that the client resolves to every replica), `shm_sockets` (target -> the server's
    --shm-socket path, used by workers on that server's host), and Client options (token, tls, ...)."""

    def __init__(self, targets: Union[str, Sequence[str]], *, shm_sockets: Optional[Mapping[str, str]] = None,
                 down_seconds: float = 30.0, **client_options: Any) -> None:
        self.targets: Tuple[str, ...] = (targets,) if isinstance(targets, str) else tuple(targets)
        if not self.targets:
            raise ValueError("gpusort.dask: Servers needs at least one target")
        self.shm_sockets: Dict[str, str] = dict(shm_sockets or {})
        self.down_seconds = float(down_seconds)
        self.client_options = dict(client_options)

    def key(self) -> Tuple[Any, ...]:
        return (self.targets, tuple(sorted(self.shm_sockets.items())), tuple(sorted(self.client_options.items())))

    def __repr__(self) -> str:
        return "Servers(%r)" % (list(self.targets),)


def as_servers(servers: Union[None, str, Sequence[str], Servers]) -> Servers:
    """A Servers for what the caller passed: None means $GPUSORT_SERVER (or the default target)."""
    if isinstance(servers, Servers):
        return servers
    if servers is None:
        return Servers(os.environ.get("GPUSORT_SERVER") or "127.0.0.1:50051")
    return Servers(servers)


_lock = threading.Lock()
_clients: Dict[Tuple[Any, ...], Tuple[str, Client]] = {}  # per Servers: the chosen target and its client
_down: Dict[str, float] = {}  # target -> when it may be tried again


def _host_of(target: str) -> str:
    if target.startswith("unix:"):
        return "localhost"
    if target.startswith("["):
        return target[1:].split("]", 1)[0]
    return target.rsplit(":", 1)[0] if ":" in target else target


def _local_addresses() -> List[str]:
    names = {"localhost", socket.gethostname(), socket.getfqdn()}
    addresses: Set[str] = set()
    for name in names:
        try:
            addresses.update(info[4][0] for info in socket.getaddrinfo(name, None))
        except OSError:
            pass
    return sorted(names | addresses)


def _is_local(target: str, local: List[str]) -> bool:
    host = _host_of(target)
    if host in local or host.startswith("127.") or host == "::1" or target.startswith("unix:"):
        return True
    try:
        return any(info[4][0] in local for info in socket.getaddrinfo(host, None))
    except OSError:
        return False


def _worker_name() -> str:
    """This worker's address where Dask runs us (spreads workers over a host's servers), else the pid."""
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except Exception:  # not in a worker: a local scheduler or the caller's own process
        return "pid-%d" % os.getpid()


def _replicas(target: str, plaintext: bool) -> List[str]:
    """A name that resolves to several IPv4 addresses (a headless Service's replicas) as one target per
    address, so that workers spread over them and find the one on their host; anything else as it is.
    Not under TLS: the certificate names the Service, not its pods' addresses."""
    if not plaintext or target.startswith(("unix:", "dns:", "[")) or ":" not in target:
        return [target]
    host, port = target.rsplit(":", 1)
    try:
        addresses = sorted({info[4][0] for info in socket.getaddrinfo(host, int(port), socket.AF_INET)})
    except (OSError, ValueError):
        return [target]
    return ["%s:%s" % (a, port) for a in addresses] if len(addresses) > 1 else [target]


def _candidates(servers: Servers) -> List[str]:
    """The targets (a Service name as its replicas), after the worker's own node's server where its
    deployment names one ($GPUSORT_NODE_SERVER: deploy/kubernetes-dask sets it to the node-local
    Service)."""
    plaintext = not servers.client_options.get("tls")
    expanded = [r for t in servers.targets for r in _replicas(t, plaintext)]
    node = os.environ.get("GPUSORT_NODE_SERVER")
    return ([node] if node and node not in expanded else []) + expanded


def choose(servers: Servers) -> str:
    """The target this process's tasks call: the node's server ($GPUSORT_NODE_SERVER) first, then a
    server on this host, spread by the worker's name; targets marked down are skipped while others
    remain."""
    now = time.monotonic()
    candidates = _candidates(servers)
    up = [t for t in candidates if _down.get(t, 0.0) <= now] or candidates
    node = os.environ.get("GPUSORT_NODE_SERVER")
    if node and node in up:
        return node
    local = _local_addresses()
    near = [t for t in up if _is_local(t, local)] or up
    spread = int(hashlib.sha256(_worker_name().encode()).hexdigest(), 16)
    return near[spread % len(near)]


def client_for(servers: Servers) -> Tuple[str, Client]:
    """The worker's Client for `servers`, made on first use and kept (one per process)."""
    key = servers.key()
    with _lock:
        held = _clients.get(key)
        if held is not None and _down.get(held[0], 0.0) <= time.monotonic():
            return held
        target = choose(servers)
        options = dict(servers.client_options)
        path = servers.shm_sockets.get(target)
        if path and os.path.exists(path) and "shm_socket" not in options:
            options["shm_socket"] = path
        made = (target, Client(target, **options))
        _clients[key] = made
        return made


def call(servers: Servers, work: Callable[[Client], Any]) -> Any:
    """work(client) on this worker's server. A server found gone is marked down and the call tried on
    the next one, each server at most once; when none answers, gpusort's error propagates (and the
    task's Dask retries, where asked, try again later, elsewhere)."""
    tries = len(_candidates(servers))
    for attempt in range(tries):
        target, client = client_for(servers)
        try:
            return work(client)
        except (UnavailableError, DeadlineExceededError):
            with _lock:
                _down[target] = time.monotonic() + servers.down_seconds
                if _clients.get(servers.key(), (None,))[0] == target:
                    del _clients[servers.key()]
            if attempt + 1 == tries:
                raise
    raise AssertionError("unreachable")  # the loop returns or raises


def sorted_with_order(servers: Servers, keys: "np.ndarray[Any, Any]", descending: bool = False
                      ) -> Tuple["np.ndarray[Any, Any]", "np.ndarray[Any, Any]"]:
    """(keys sorted stably, the int64 order that sorts them) from one call, as torch.sort answers: the
    client's own _sort, since sort_with would move a positions array by the order (a random gather of
    every key) where the caller needs only an add or the order itself."""
    sorted_keys, order, _ = call(servers, lambda c: c._sort(keys, -1, descending, True, None, None, None, None,
                                                             None, True))
    return sorted_keys, order
