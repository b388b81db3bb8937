"""gpusort.aio.Client (issue 43): the same answers as gpusort.Client under many concurrent awaits, an event
loop that keeps running while calls wait on the server, calls over grpc.aio that hold no thread while
they wait and whose cancellation reaches the server, and the same errors."""
import asyncio
import time

import numpy as np
import pytest

import gpusort
import gpusort.aio

from reference import make, reference_topk, same


def test_many_concurrent_awaits_each_get_their_own_answer(server_target):
    arrays = [make(dtype, n, seed) for seed, (dtype, n) in
              enumerate([(np.float32, 1000), (np.int64, 4097), (np.uint16, 31), (np.float64, 20000)] * 50)]

    async def main():
        async with gpusort.aio.Client(server_target, max_concurrency=16, timeout=120) as client:
            sorts = [client.sort(a) for a in arrays]
            argsorts = [client.argsort(a) for a in arrays]
            topks = [client.topk(a.reshape(1, -1), 5) for a in arrays]
            return await asyncio.gather(*sorts, *argsorts, *topks)

    answers = asyncio.run(main())
    n = len(arrays)
    for i, a in enumerate(arrays):
        same(answers[i], np.sort(a, kind="stable"))
        assert np.array_equal(answers[n + i], np.argsort(a, kind="stable"))
        values, indices = answers[2 * n + i]
        want_values, want_indices = reference_topk(a.reshape(1, -1), 5, True)
        same(values, want_values)
        assert np.array_equal(indices, want_indices)


def test_the_event_loop_runs_while_a_call_waits_on_the_server(server_target):
    a = make(np.float32, 3_000_000, 5)

    async def main():
        async with gpusort.aio.Client(server_target, timeout=120) as client:
            task = asyncio.create_task(client.sort(a))
            await asyncio.sleep(0.001)
            # A call that blocked the loop would have finished before this line ran.
            running_at_first_tick = not task.done()
            ticks = 0
            while not task.done():
                ticks += 1
                await asyncio.sleep(0.005)
            return running_at_first_tick, ticks, await task

    running_at_first_tick, ticks, answer = asyncio.run(main())
    assert running_at_first_tick and ticks > 0
    same(answer, np.sort(a, kind="stable"))


def test_a_cancelled_await_leaves_the_client_working(server_target):
    a = make(np.float64, 2_000_000, 6)
    b = make(np.int32, 1000, 7)

    async def main():
        async with gpusort.aio.Client(server_target, timeout=120) as client:
            task = asyncio.create_task(client.sort(a))
            await asyncio.sleep(0.001)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return await client.sort(b)

    same(asyncio.run(main()), np.sort(b))


def _in_flight(metrics_text):
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics_text.splitlines()
               if line.startswith("gpusort_inflight_requests"))


def _cancelled_sorts(metrics_text):
    total = 0.0
    for line in metrics_text.splitlines():
        if line.startswith("gpusort_requests_total{") and 'code="CANCELLED"' in line and "Sort" in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_a_cancelled_await_cancels_the_call_on_the_server(server_target, server_metrics):
    a = make(np.float64, 16 << 20, 8)  # 128 MiB: a stream of chunks, long enough to cancel mid-way
    before = _cancelled_sorts(server_metrics())

    async def main():
        loop = asyncio.get_running_loop()
        async with gpusort.aio.Client(server_target, timeout=120) as client:
            task = asyncio.create_task(client.sort(a))
            # until the server holds the call (the keys are read and re-coded on a thread first)
            while not task.done() and _in_flight(await loop.run_in_executor(None, server_metrics)) == 0:
                await asyncio.sleep(0.005)
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(main())
    # The blocking client's pool would have let the call run on to an OK answer nobody reads.
    for _ in range(200):
        if _cancelled_sorts(server_metrics()) > before:
            break
        time.sleep(0.05)
    assert _cancelled_sorts(server_metrics()) == before + 1


def test_a_call_waiting_on_the_server_holds_no_thread(server_target, server_metrics):
    big = make(np.float32, 8 << 20, 9)

    async def main():
        loop = asyncio.get_running_loop()
        async with gpusort.aio.Client(server_target, max_concurrency=1, timeout=120) as client:
            slow = asyncio.create_task(client.sort(big))
            while not slow.done() and _in_flight(await loop.run_in_executor(None, server_metrics)) == 0:
                await asyncio.sleep(0.005)
            # The call is the server's now: the client's one thread is free (the pool of the first
            # gpusort.aio held it until the answer came).
            free = await asyncio.wait_for(loop.run_in_executor(client._pool, lambda: True), timeout=60)
            return free, slow.done(), await slow

    free, slow_done_first, answer = asyncio.run(main())
    assert free and not slow_done_first
    same(answer, np.sort(big))


def test_errors_are_the_blocking_clients(server_target):
    async def main():
        async with gpusort.aio.Client("127.0.0.1:1", timeout=2) as dead:
            with pytest.raises(ConnectionError) as error:
                await dead.sort(np.arange(10))
            assert isinstance(error.value, gpusort.UnavailableError)
        async with gpusort.aio.Client(server_target) as client:
            with pytest.raises(TypeError):
                await client.topk(np.arange(10), 2.5)
            with pytest.raises(gpusort.UnimplementedError):
                await client.sort(np.arange(10, dtype=np.int32), algorithm="small_k")
            await client.sort(np.arange(10, dtype=np.int32))
            assert isinstance(client.last_info, gpusort.CallInfo)
        closing = gpusort.aio.Client(server_target, timeout=120)
        in_flight = asyncio.create_task(closing.sort(make(np.float32, 2_000_000, 11)))
        await asyncio.sleep(0)
        await closing.close()  # waits for the call in flight, which ends with its answer
        assert in_flight.done() and in_flight.result().size == 2_000_000
        with pytest.raises(RuntimeError, match="closed"):
            await closing.sort(np.arange(3))
        with pytest.raises(ValueError, match="max_concurrency"):
            gpusort.aio.Client(server_target, max_concurrency=0)

    asyncio.run(main())
