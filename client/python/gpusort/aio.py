"""gpusort.aio.Client: gpusort.Client's calls as coroutines, for asyncio services.

    async with gpusort.aio.Client("127.0.0.1:50051") as client:
        s = await client.sort(a)
        values, indices = await client.topk(a, 10)

Each call runs gpusort.Client's call on a thread of this client's own pool (max_concurrency threads, 64
unless told), so the event loop never waits for the server and many calls are in flight at once on one
channel; every option and transport of gpusort.Client (shared memory, the data port, CUDA arrays) works
the same, with the same answers and errors. An await that is cancelled stops waiting at once; the call
itself runs on to its end on its thread (timeout= bounds it) and its answer is dropped. close() waits for
the calls in flight. Not built on grpc.aio: the blocking client's transports other than gRPC would each need
an asynchronous twin.
"""
import asyncio
import concurrent.futures
import functools
from typing import Any, Callable, Optional, SupportsIndex, Tuple, TypeVar

from ._client import ArrayLike, Client as _BlockingClient
from .info import CallInfo

_T = TypeVar("_T")


class Client:
    """The coroutines of gpusort.Client: `target` and `options` are its arguments (timeout, nan, shm_socket,
    transport, ...); max_concurrency is how many calls run at once (more wait for a thread)."""

    def __init__(self, target: Optional[str] = None, *, max_concurrency: int = 64, **options: Any) -> None:
        if max_concurrency < 1:
            raise ValueError("gpusort: max_concurrency must be at least 1, not %r" % (max_concurrency,))
        self._client = _BlockingClient(target, **options)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=max_concurrency,
                                                           thread_name_prefix="gpusort-aio")
        self.target = self._client.target

    @property
    def last_info(self) -> Optional[CallInfo]:
        """The CallInfo of the call answered last (with many in flight, whichever that was)."""
        return self._client.last_info

    async def _run(self, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(call, *args, **kwargs))

    async def sort(self, a: ArrayLike, axis: Optional[SupportsIndex] = -1, **options: Any) -> Any:
        """gpusort.Client.sort, awaited."""
        return await self._run(self._client.sort, a, axis, **options)

    async def argsort(self, a: ArrayLike, axis: Optional[SupportsIndex] = -1, **options: Any) -> Any:
        """gpusort.Client.argsort, awaited."""
        return await self._run(self._client.argsort, a, axis, **options)

    async def sort_with(self, keys: ArrayLike, values: ArrayLike, axis: Optional[SupportsIndex] = -1,
                        **options: Any) -> Tuple[Any, Any]:
        """gpusort.Client.sort_with, awaited."""
        return await self._run(self._client.sort_with, keys, values, axis, **options)

    async def topk(self, a: ArrayLike, k: SupportsIndex, axis: Optional[SupportsIndex] = -1,
                   **options: Any) -> Tuple[Any, Any]:
        """gpusort.Client.topk, awaited."""
        return await self._run(self._client.topk, a, k, axis, **options)

    async def close(self) -> None:
        """Waits for the calls in flight, then closes the channel and what the client registered."""
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, functools.partial(self._pool.shutdown, wait=True))
        self._client.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
