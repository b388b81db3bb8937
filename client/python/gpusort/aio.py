"""gpusort.aio.Client: gpusort.Client's calls as coroutines, for asyncio services, on grpc.aio.

    async with gpusort.aio.Client("127.0.0.1:50051") as client:
        s = await client.sort(a)
        values, indices = await client.topk(a, 10)

A call's exchange with the server over gRPC (one message, or a stream of chunks) is a grpc.aio call
awaited on the event loop: no thread waits for the server, and an await that is cancelled cancels the
RPC (the server stops the work at its next check). At most max_concurrency calls (32 unless told) are
in flight at once; more wait their turn here rather than be refused by the server, whose share for one
caller is --max-inflight-per-caller (48 by default). The work around each exchange (reading the caller's
array, re-coding NaN for nan="numpy", copying the answer back into the caller's kind) runs on a thread
of this client's pool (as many threads), so that a large array never stalls the loop.
The same steps as gpusort.Client's (Client._sort_steps, _topk_steps), so the answers and errors are the
same. Calls whose keys travel another way (shared memory, the data port, CUDA arrays) run whole on the
pool, as blocking calls: those transports have no asyncio twin; cancelling their await stops the wait
and drops the answer, and timeout= bounds the call itself.
"""
import asyncio
import concurrent.futures
import functools
from typing import Any, Callable, Optional, SupportsIndex, Tuple, TypeVar

import grpc
import grpc.aio

from . import _device
from ._client import ArrayLike, Client as _BlockingClient, Exchange, SortCall, Steps
from .errors import BadAnswerError
from .info import CallInfo
from .v1 import sort_pb2_grpc as pb_grpc

_T = TypeVar("_T")


def _advance(steps: "Steps[_T]", answer: Any) -> Tuple[bool, Any]:
    """(True, the call's result) once the steps are done, else (False, the next exchange). StopIteration
    cannot cross a Future, so it is turned into a value here."""
    try:
        return False, steps.send(answer)
    except StopIteration as done:
        return True, done.value


class Client:
    """The coroutines of gpusort.Client: `target` and `options` are its arguments (timeout, nan, token, tls,
    shm_socket, transport, ...); max_concurrency is how many calls are in flight at once (more wait in the
    client), and how many threads do their work on the host (calls waiting on the server over gRPC hold
    none)."""

    def __init__(self, target: Optional[str] = None, *, max_concurrency: int = 32, **options: Any) -> None:
        if max_concurrency < 1:
            raise ValueError("gpusort: max_concurrency must be at least 1, not %r" % (max_concurrency,))
        self._client = _BlockingClient(target, **options)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=max_concurrency,
                                                           thread_name_prefix="gpusort-aio")
        self.target = self._client.target
        self._max_concurrency = max_concurrency
        self._turns: Optional[asyncio.Semaphore] = None  # made in the running loop, on first use
        self._in_flight = 0
        self._idle: Optional[asyncio.Event] = None  # set while no call is in flight
        self._closed = False
        self._channel: Optional[grpc.aio.Channel] = None
        self._stub: Any = None  # the generated stub (untyped)

    @property
    def last_info(self) -> Optional[CallInfo]:
        """The CallInfo of the call answered last (with many in flight, whichever that was)."""
        return self._client.last_info

    async def sort(self, a: ArrayLike, axis: Optional[SupportsIndex] = -1, *, descending: bool = False,
                   stable: bool = True, algorithm: Optional[str] = None, dtype: Optional[str] = None,
                   nan: Optional[str] = None, offsets: Any = None) -> Any:
        """gpusort.Client.sort, awaited."""
        steps = self._client._sort_steps(a, axis, descending, stable, algorithm, dtype, nan, offsets, None, False)
        return (await self._drive(a, steps))[0]

    async def argsort(self, a: ArrayLike, axis: Optional[SupportsIndex] = -1, *, descending: bool = False,
                      stable: bool = True, algorithm: Optional[str] = None, dtype: Optional[str] = None,
                      nan: Optional[str] = None, offsets: Any = None) -> Any:
        """gpusort.Client.argsort, awaited."""
        steps = self._client._sort_steps(a, axis, descending, stable, algorithm, dtype, nan, offsets, None, True)
        return (await self._drive(a, steps))[1]

    async def sort_with(self, keys: ArrayLike, values: ArrayLike, axis: Optional[SupportsIndex] = -1, *,
                        descending: bool = False, stable: bool = True, algorithm: Optional[str] = None,
                        dtype: Optional[str] = None, nan: Optional[str] = None, offsets: Any = None
                        ) -> Tuple[Any, Any]:
        """gpusort.Client.sort_with, awaited."""
        steps = self._client._sort_steps(keys, axis, descending, stable, algorithm, dtype, nan, offsets, values,
                                         False)
        sorted_keys, _, moved = await self._drive(keys, steps)
        return sorted_keys, moved

    async def topk(self, a: ArrayLike, k: SupportsIndex, axis: Optional[SupportsIndex] = -1, *,
                   largest: bool = True, sorted: bool = True, algorithm: Optional[str] = None,
                   dtype: Optional[str] = None, nan: Optional[str] = None, offsets: Any = None) -> Tuple[Any, Any]:
        """gpusort.Client.topk, awaited."""
        steps = self._client._topk_steps(a, k, axis, largest, sorted, algorithm, dtype, nan, offsets)
        return await self._drive(a, steps)

    async def close(self) -> None:
        """Waits for the calls in flight, then closes the channels and what the client registered; calls
        made after it began raise RuntimeError."""
        self._closed = True
        if self._idle is not None:
            await self._idle.wait()
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, functools.partial(self._pool.shutdown, wait=True))
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
        self._client.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- internals ---------------------------------------------------------------------------------

    async def _on_pool(self, call: Callable[..., _T], *args: Any) -> _T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, call, *args)

    async def _drive(self, a: Any, steps: "Steps[_T]") -> _T:
        """Runs a call's steps on the pool and awaits each exchange with the server in between, once one of
        the max_concurrency turns is free."""
        if self._closed:
            steps.close()
            raise RuntimeError("gpusort: this gpusort.aio.Client is closed")
        if self._turns is None or self._idle is None:
            self._turns = asyncio.Semaphore(self._max_concurrency)
            self._idle = asyncio.Event()
        self._in_flight += 1
        self._idle.clear()
        try:
            async with self._turns:
                return await self._run_steps(a, steps)
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    async def _run_steps(self, a: Any, steps: "Steps[_T]") -> _T:
        client = self._client
        if client.use_shm or client.use_sockets or _device.is_cuda(a):
            return await self._on_pool(client._drive, steps)  # transports with no asyncio twin
        try:
            answer: Any = None
            while True:
                done, value = await self._on_pool(_advance, steps, answer)
                if done:
                    return value  # type: ignore[no-any-return]  # the steps' own result
                answer = await self._exchange(value)
        finally:
            try:
                steps.close()
            except ValueError:  # still running on a thread (its await was cancelled): it ends there
                pass

    def _grpc_stub(self) -> Any:
        """The grpc.aio stub, made on first use inside the running event loop (grpc.aio binds a channel
        to the loop it was made in)."""
        if self._stub is None:
            client = self._client
            if client._credentials is not None:
                self._channel = grpc.aio.secure_channel(client.target, client._credentials, client._channel_options)
            else:
                self._channel = grpc.aio.insecure_channel(client.target, client._channel_options)
            self._stub = pb_grpc.SortServiceStub(self._channel)
        return self._stub

    async def _exchange(self, exchange: Exchange) -> Any:
        """gpusort.Client._over_grpc, awaited: one unary call or one streaming call."""
        client, stub = self._client, self._grpc_stub()
        sort = isinstance(exchange, SortCall)
        try:
            if client.fits_one_message(exchange):
                request = await self._on_pool(client.message_request, exchange)
                method = stub.Sort if sort else stub.TopK
                reply = await method(request, timeout=client.timeout, metadata=client._metadata)
                return await self._on_pool(client.message_answer, exchange, reply)
            outputs = client.stream_outputs(exchange)
            answer = client.stream_answer(exchange, outputs)
            method = stub.SortStream if sort else stub.TopKStream
            call = method(client.stream_requests(exchange), timeout=client.timeout, metadata=client._metadata)
            try:
                async for reply in call:
                    client.stream_reply(answer, reply)
            except BadAnswerError:
                call.cancel()  # the rest of a broken answer is of no use: stop the server sending it
                raise
            answer.finish()
            return client.stream_result(exchange, outputs)
        except grpc.RpcError as error:
            raise client._fail(error) from None
