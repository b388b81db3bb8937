"""gpusort.aio.Client (issue 43): the same answers as gpusort.Client under many concurrent awaits, an event
loop that keeps running while calls wait on the server, cancellation that stops only the await, and the
same errors."""
import asyncio

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
        with pytest.raises(ValueError, match="max_concurrency"):
            gpusort.aio.Client(server_target, max_concurrency=0)

    asyncio.run(main())
