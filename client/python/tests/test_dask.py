"""gpusort.dask on a distributed.LocalCluster of worker processes and two gpusort servers (CPU backend
here; the servers' backend does not change the answers): every dtype against numpy and pandas bit for
bit, uneven and empty chunks, heavy duplicates (buckets still even), NaN, a server stopped and a worker
killed mid-sort."""
import os
import threading
import time

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402

from reference import DTYPES, make  # noqa: E402
from conftest import StartedServer  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as local, distributed.Client(local) as client:
        yield client


@pytest.fixture(scope="module")
def servers(server_target, second_server):
    import gpusort.dask as gd

    return gd.Servers([server_target, second_server.target], timeout=120)


def bits(a):
    """The array's bytes as unsigned integers: bit-for-bit comparison (NaN payloads and zero signs)."""
    return a.view("u%d" % a.dtype.itemsize) if a.dtype.kind == "f" else a


def specials(dtype, n, seed):
    """Random keys with duplicates, and for floats NaNs of both signs and payloads, +-0.0, +-inf."""
    a = make(dtype, n, seed)
    rng = np.random.default_rng(seed + 1)
    a[rng.integers(0, n, n // 8)] = a[rng.integers(0, n, n // 8)]  # duplicates
    if np.dtype(dtype).kind == "f":
        u = "u%d" % np.dtype(dtype).itemsize
        quiet = int(np.array(np.nan, dtype).view(u))
        picks = rng.integers(0, n, 12)
        a[picks[:3]] = np.array([quiet | 1, quiet | 3, quiet], dtype=u).view(dtype)
        a[picks[3:5]] = -np.array(np.nan, dtype)
        a[picks[5:8]] = np.array([0.0, -0.0, -0.0], dtype)
        a[picks[8:10]] = np.array([np.inf, -np.inf], dtype)
    return a


UNEVEN = (0, 700, 1, 0, 2500, 333, 1200, 0, 266)  # 5000 keys, empty chunks among them


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_argsort_equal_numpy_bit_for_bit(cluster, servers, dtype):
    import gpusort.dask as gd

    x = specials(dtype, sum(UNEVEN), 5)
    d = da.from_array(x, chunks=(UNEVEN,))
    got = gd.sort(d, servers).compute()
    assert got.dtype == x.dtype
    assert np.array_equal(bits(got), bits(np.sort(x, kind="stable")))
    positions = gd.argsort(d, servers).compute()
    assert positions.dtype == np.int64
    assert np.array_equal(positions, np.argsort(x, kind="stable"))


def test_a_key_most_of_the_data_holds_still_spreads_over_the_buckets(cluster, servers):
    import gpusort.dask as gd

    n = 40000
    x = np.full(n, 7, dtype=np.int32)
    x[::20] = np.arange(n // 20, dtype=np.int32)  # 5% other keys
    d = da.from_array(x, chunks=n // 8)
    result = gd.argsort(d, servers).persist()
    assert np.array_equal(result.compute(), np.argsort(x, kind="stable"))
    sizes = result.compute_chunk_sizes().chunks[0]
    assert len(sizes) == 8
    assert max(sizes) <= 2 * (n / 8), sizes  # the 7s split across buckets, in position order


def test_sort_of_an_empty_array_and_of_one_chunk(cluster, servers):
    import gpusort.dask as gd

    empty = da.from_array(np.zeros(0, np.float32), chunks=1)
    assert gd.sort(empty, servers).compute().shape == (0,)
    x = specials(np.float64, 1000, 3)
    assert np.array_equal(bits(gd.sort(da.from_array(x, chunks=1000), servers).compute()),
                          bits(np.sort(x, kind="stable")))


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk_equals_one_servers_topk_of_the_whole_array(cluster, servers, server_target, dtype):
    import gpusort
    import gpusort.dask as gd

    x = specials(dtype, sum(UNEVEN), 9)
    d = da.from_array(x, chunks=(UNEVEN,))
    with gpusort.Client(server_target) as whole:
        for largest in (True, False):
            for k in (1, 37, 1200):
                values, indices = gd.topk(d, k, servers, largest=largest, split_every=3)
                want_values, want_indices = whole.topk(x, k, largest=largest)
                got_values = values.compute()
                assert np.array_equal(bits(got_values), bits(want_values)), (largest, k)
                assert np.array_equal(indices.compute(), want_indices), (largest, k)


def test_topk_of_each_row(cluster, servers, server_target):
    import gpusort
    import gpusort.dask as gd

    x = specials(np.float32, 60 * 900, 4).reshape(60, 900)
    d = da.from_array(x, chunks=((25, 35), (100, 0, 400, 400)))
    values, indices = gd.topk(d, 50, servers)
    with gpusort.Client(server_target) as whole:
        want_values, want_indices = whole.topk(x, 50, axis=-1)
    assert np.array_equal(bits(values.compute()), bits(want_values))
    assert np.array_equal(indices.compute(), want_indices)
    with pytest.raises(ValueError):
        gd.topk(d, 901, servers)


def frame(n, seed, nan=True):
    rng = np.random.default_rng(seed)
    keys = np.round(rng.standard_normal(n) * 20)  # many ties
    if nan:
        keys[rng.integers(0, n, n // 10)] = np.nan
        keys[rng.integers(0, n, 20)] = -0.0
    return pd.DataFrame({"key": keys, "row": np.arange(n), "small": rng.integers(-5, 5, n).astype(np.int16)},
                        index=np.arange(n) * 3)


@pytest.mark.parametrize("ascending", [True, False])
@pytest.mark.parametrize("column", ["key", "small"])
def test_sort_values_equals_pandas_stable(cluster, servers, ascending, column):
    import gpusort.dask as gd

    df = frame(6000, 11)
    ddf = dd.from_pandas(df, npartitions=5)
    ddf = ddf[ddf.row % 1000 < 990]  # uneven partitions
    want = ddf.compute().sort_values(column, ascending=ascending, kind="stable")
    got = gd.sort_values(ddf, column, ascending=ascending, servers=servers).compute()
    pd.testing.assert_frame_equal(got, want)
    assert np.array_equal(bits(got[column].to_numpy()), bits(want[column].to_numpy()))


def test_sort_values_with_empty_partitions(cluster, servers):
    import gpusort.dask as gd

    df = frame(3000, 12)
    ddf = dd.from_pandas(df, npartitions=6)
    ddf = ddf[(ddf.row < 500) | (ddf.row >= 2500)]  # the middle partitions empty
    want = ddf.compute().sort_values("key", kind="stable")
    pd.testing.assert_frame_equal(gd.sort_values(ddf, "key", servers=servers).compute(), want)


@pytest.mark.parametrize("n", [0, 1, 25, 5000])
def test_nlargest_and_nsmallest_equal_pandas(cluster, servers, n):
    import gpusort.dask as gd

    df = frame(4000, 13)
    ddf = dd.from_pandas(df, npartitions=7)
    if n < len(df):
        want_largest, want_smallest = df.nlargest(n, "key"), df.nsmallest(n, "small")
    else:  # pandas then sorts with its default (unstable) kind; keep="first" is the stable order
        want_largest = df.sort_values("key", ascending=False, kind="stable").head(n)
        want_smallest = df.sort_values("small", kind="stable").head(n)
    pd.testing.assert_frame_equal(gd.nlargest(ddf, n, "key", servers).compute(), want_largest)
    pd.testing.assert_frame_equal(gd.nsmallest(ddf, n, "small", servers).compute(), want_smallest)


def test_a_lost_server_fails_with_gpusorts_error_and_a_retry_goes_elsewhere(cluster, server_target):
    import gpusort
    import gpusort.dask as gd

    stopped = StartedServer()
    stopped.stop()
    x = make(np.uint32, 20000, 21)
    d = da.from_array(x, chunks=2500)
    with pytest.raises(gpusort.UnavailableError):
        gd.sort(d, gd.Servers([stopped.target], timeout=10), retries=0).compute()
    # Every worker tries the stopped server first (it is the only one on the list at first choice? no:
    # spread by the worker's name), so some tasks fail on it; their retries reach the other server.
    fleet = gd.Servers([stopped.target, server_target], timeout=10)
    assert np.array_equal(gd.sort(d, fleet, retries=3).compute(), np.sort(x))


def test_a_server_stopped_mid_sort_and_a_worker_killed_mid_sort(cluster, server_target):
    import gpusort.dask as gd

    doomed = StartedServer()
    fleet = gd.Servers([doomed.target, server_target], timeout=30)
    x = make(np.float64, 400000, 22)
    d = da.from_array(x, chunks=25000)
    future = cluster.compute(gd.argsort(d, fleet, retries=4))
    time.sleep(0.3)
    doomed.stop()
    assert np.array_equal(future.result(timeout=300), np.argsort(x, kind="stable"))

    future = cluster.compute(gd.sort(d, fleet, retries=4))
    time.sleep(0.3)
    sent = time.monotonic()
    victim = sorted(cluster.scheduler_info()["workers"])[0]

    def kill():
        try:
            cluster.run(os._exit, 1, workers=[victim])
        except Exception:  # the worker dies before it answers
            pass

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    assert np.array_equal(future.result(timeout=300), np.sort(x))
    killer.join(timeout=60)
    assert victim not in cluster.scheduler_info()["workers"], "the worker was not killed"
    print("sort finished %.2f s after the kill was sent" % (time.monotonic() - sent))


def test_a_worker_uses_the_shared_memory_of_its_hosts_server(cluster, server_target, shm_socket):
    import gpusort.dask as gd

    servers = gd.Servers([server_target], shm_sockets={server_target: shm_socket}, timeout=60)
    x = specials(np.float32, 30000, 31)
    assert np.array_equal(bits(gd.sort(da.from_array(x, chunks=7000), servers).compute()),
                          bits(np.sort(x, kind="stable")))

    def uses_shm(servers):
        from gpusort.dask import _servers

        return _servers.client_for(servers)[1].use_shm

    assert all(cluster.run(uses_shm, servers).values())
    assert not any(cluster.run(uses_shm, gd.Servers([server_target], timeout=60)).values())


def test_which_server_a_worker_chooses(monkeypatch):
    from gpusort.dask import _servers

    fleet = _servers.Servers(["10.0.0.1:50051", "10.0.0.2:50051"])
    monkeypatch.setattr(_servers, "_local_addresses", lambda: ["10.0.0.2"])
    assert _servers.choose(fleet) == "10.0.0.2:50051"  # the one on this host
    monkeypatch.setitem(_servers._down, "10.0.0.2:50051", time.monotonic() + 60)
    assert _servers.choose(fleet) == "10.0.0.1:50051"  # it is down: another
    monkeypatch.setenv("GPUSORT_NODE_SERVER", "node-local:50051")
    assert _servers.choose(fleet) == "node-local:50051"  # the deployment's node server first
    monkeypatch.delenv("GPUSORT_NODE_SERVER")

    def resolve(host, port, family=0, *args):
        if host == "gpusort-headless":
            return [(2, 1, 6, "", ("10.0.0.%d" % i, port)) for i in (3, 2, 1)]
        raise OSError("unknown host")

    monkeypatch.setattr(_servers.socket, "getaddrinfo", resolve)
    service = _servers.Servers("gpusort-headless:50051")
    assert _servers._candidates(service) == ["10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051"]
    assert _servers.choose(service) in ("10.0.0.1:50051", "10.0.0.3:50051")  # 10.0.0.2, local, is down
    monkeypatch.delitem(_servers._down, "10.0.0.2:50051")
    assert _servers.choose(service) == "10.0.0.2:50051"  # the replica on this host
    assert _servers._candidates(_servers.Servers("gpusort-headless:50051", tls=True)) == ["gpusort-headless:50051"]


def test_what_it_refuses_it_says_before_any_task_runs(servers):
    import gpusort.dask as gd

    with pytest.raises(ValueError, match="1-D"):
        gd.sort(da.zeros((4, 4), chunks=2), servers)
    with pytest.raises(ValueError, match="outside"):
        gd.topk(da.zeros(10, chunks=5), 11, servers)
    with pytest.raises(ValueError, match="1-D array or a 2-D"):
        gd.topk(da.zeros((2, 2, 2), chunks=1), 1, servers)
    with pytest.raises(ValueError, match="negative"):
        gd.nlargest(dd.from_pandas(frame(10, 1), npartitions=2), -1, "key", servers)
    with pytest.raises(ValueError, match="at least one target"):
        gd.Servers([])


def test_a_key_column_that_is_not_numeric_fails_with_a_clear_error(cluster, servers):
    import gpusort.dask as gd

    df = pd.DataFrame({"name": ["b", "a", "c"] * 10, "row": np.arange(30)})
    with pytest.raises(TypeError, match="not numeric"):
        gd.sort_values(dd.from_pandas(df, npartitions=2), "name", servers=servers).compute()


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_values_and_nlargest_on_every_key_dtype(cluster, servers, dtype):
    import gpusort.dask as gd

    keys = specials(dtype, 3000, 17)
    df = pd.DataFrame({"key": keys, "row": np.arange(len(keys))})
    ddf = dd.from_pandas(df, npartitions=4)
    for ascending in (True, False):
        want = df.sort_values("key", ascending=ascending, kind="stable")
        got = gd.sort_values(ddf, "key", ascending=ascending, servers=servers).compute()
        assert np.array_equal(got["row"].to_numpy(), want["row"].to_numpy()), ascending
        assert np.array_equal(bits(got["key"].to_numpy()), bits(want["key"].to_numpy())), ascending
    pd.testing.assert_frame_equal(gd.nlargest(ddf, 50, "key", servers).compute(), df.nlargest(50, "key"))
