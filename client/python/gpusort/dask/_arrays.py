"""Dask arrays sorted and selected on gpusort servers: the graphs and the tasks they run.

sort / argsort of a 1-D array (a sample sort): each block sorted by gpusort with its positions; from
each sorted block its quantiles; the quantiles of all blocks sorted by gpusort and cut into splitters
(_split.py); each sorted block cut at the splitters into one piece per bucket; each bucket, its pieces
from every block (Dask moves them: its own all-to-all of tasks), sorted by gpusort. Buckets are the
answer's chunks, in order, of about the input's chunk size (their lengths are known once computed).

topk of a 1-D array, or per row of a 2-D one: each block's top-k by gpusort, with positions in the whole
array (row), then a tree of gpusort top-ks over the candidates, `split_every` at a time, as
dask.array.topk reduces, but with indices and on the servers.

Every task that calls a server runs under dask.annotate(retries=...): a lost server fails the task with
gpusort's error and the retry goes to another (_servers.py).
"""
from typing import Any, List, Sequence, Tuple, Union

import numpy as np

from . import _servers, _split
from ._servers import Servers

SAMPLES_PER_BUCKET = 64  # quantiles taken from each sorted block, per bucket of the answer


def _dask() -> Any:
    import dask
    import dask.array

    return dask


def _sorted_block(block: "np.ndarray[Any, Any]", start: int, servers: Servers) -> _split.Sorted:
    """The block's keys sorted, with their positions in the whole array (start + the sorting order)."""
    block = np.ascontiguousarray(block).reshape(-1)
    if len(block) == 0:
        return block, np.zeros(0, dtype=np.int64)
    keys, order = _servers.sorted_with_order(servers, block)
    return keys, order + np.int64(start)


def _splitters(samples: Sequence[_split.Sorted], parts: int, servers: Servers, descending: bool) -> _split.Sorted:
    keys, positions = _split.concat(samples)
    if len(keys) > 1:  # in block order, each block's sorted: a stable sort orders (key, position)
        keys, positions = _servers.call(servers, lambda c: c.sort_with(keys, positions, descending=descending))
    return _split.pick((keys, positions), parts)


def _cut(block: _split.Sorted, splitters: _split.Sorted) -> List[_split.Sorted]:
    """The sorted block's piece for every bucket, in one task where the block lies (a task per piece could
    run elsewhere and pull the whole block to it)."""
    offsets = _split.bounds(block, splitters, False)
    return [(block[0][b:e], block[1][b:e]) for b, e in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


def _sort_bucket(pieces: Sequence[_split.Sorted], servers: Servers, want_positions: bool) -> "np.ndarray[Any, Any]":
    keys, positions = _split.concat(pieces)
    if len(keys) < 2:
        return positions if want_positions else keys
    if not want_positions:  # the keys alone: equal keys are alike, whichever position they came from
        sorted_keys: "np.ndarray[Any, Any]" = _servers.call(servers, lambda c: c.sort(keys))
        return sorted_keys
    keys, positions = _servers.call(servers, lambda c: c.sort_with(keys, positions))
    return positions


def _sort_graph(darr: Any, servers: Servers, retries: int, want_positions: bool) -> Any:
    dask = _dask()
    if darr.ndim != 1:
        raise ValueError("gpusort.dask: sort and argsort take 1-D arrays (flatten first), not %d-D" % darr.ndim)
    delayed = dask.delayed
    blocks = list(darr.to_delayed().ravel())
    starts = np.concatenate([[0], np.cumsum(darr.chunks[0])[:-1]]).astype(np.int64)
    parts = len(blocks)
    with dask.annotate(retries=retries):
        ordered = [delayed(_sorted_block, pure=False)(b, int(s), servers) for b, s in zip(blocks, starts)]
        samples = [delayed(_split.sample, pure=False)(o, SAMPLES_PER_BUCKET * parts) for o in ordered]
        splitters = delayed(_splitters, pure=False)(samples, parts, servers, False)
        cuts = [delayed(_cut, pure=False, nout=parts)(o, splitters) for o in ordered]
        buckets = [delayed(_sort_bucket, pure=False)([cut[j] for cut in cuts], servers, want_positions)
                   for j in range(parts)]
    dtype = np.dtype(np.int64) if want_positions else darr.dtype
    chunks = [dask.array.from_delayed(b, shape=(np.nan,), dtype=dtype) for b in buckets]
    return dask.array.concatenate(chunks) if chunks else dask.array.empty((0,), dtype=dtype)


def sort(darr: Any, servers: Union[None, str, Sequence[str], Servers] = None, *, retries: int = 2) -> Any:
    """numpy.sort(darr, kind="stable") of a 1-D dask array, as a dask array (chunk lengths unknown until
    computed)."""
    return _sort_graph(darr, _servers.as_servers(servers), retries, want_positions=False)


def argsort(darr: Any, servers: Union[None, str, Sequence[str], Servers] = None, *, retries: int = 2) -> Any:
    """numpy.argsort(darr, kind="stable") of a 1-D dask array: int64 positions in the whole array."""
    return _sort_graph(darr, _servers.as_servers(servers), retries, want_positions=True)


Candidates = Tuple["np.ndarray[Any, Any]", "np.ndarray[Any, Any]"]  # (values, int64 positions): rows x c


def _block_topk(block: "np.ndarray[Any, Any]", start: int, k: int, largest: bool, servers: Servers) -> Candidates:
    block = np.ascontiguousarray(block)
    take = min(k, block.shape[-1])
    if take == 0:
        return block[..., :0], np.zeros(block.shape[:-1] + (0,), dtype=np.int64)
    values, indices = _servers.call(servers, lambda c: c.topk(block, take, axis=-1, largest=largest))
    return values, indices.astype(np.int64) + start


def _combine_topk(parts: Sequence[Candidates], k: int, largest: bool, servers: Servers) -> Candidates:
    values = np.concatenate([p[0] for p in parts], axis=-1)  # in block order: ties keep to earlier positions
    positions = np.concatenate([p[1] for p in parts], axis=-1)
    take = min(k, values.shape[-1])
    if take == 0:
        return values, positions
    best, at = _servers.call(servers, lambda c: c.topk(values, take, axis=-1, largest=largest))
    return best, np.take_along_axis(positions, at.astype(np.int64), axis=-1)


def topk(darr: Any, k: int, servers: Union[None, str, Sequence[str], Servers] = None, *, largest: bool = True,
         split_every: int = 8, retries: int = 2) -> Tuple[Any, Any]:
    """(values, indices) of the k largest (or smallest) of a 1-D dask array, or of each row of a 2-D one,
    as gpusort.Client.topk (torch.topk's rule: NaN the largest, ties to the earlier position) gives them
    for the whole array; indices count from the start of the array (row)."""
    dask = _dask()
    servers = _servers.as_servers(servers)
    if darr.ndim not in (1, 2):
        raise ValueError("gpusort.dask: topk takes a 1-D array or a 2-D array by rows, not %d-D" % darr.ndim)
    k = int(k)
    length = darr.shape[-1]
    if k < 0 or k > length:
        raise ValueError("gpusort.dask: k = %d outside [0, %d]" % (k, length))
    split_every = max(2, int(split_every))
    delayed = dask.delayed
    blocks = darr.to_delayed()
    if darr.ndim == 1:
        blocks = blocks.reshape(1, -1)
    col_starts = np.concatenate([[0], np.cumsum(darr.chunks[-1])[:-1]]).astype(np.int64)
    row_chunks = darr.chunks[0] if darr.ndim == 2 else (1,)
    values_out: List[Any] = []
    indices_out: List[Any] = []
    with dask.annotate(retries=retries):
        for r in range(blocks.shape[0]):
            level = [delayed(_block_topk, pure=False)(blocks[r, c], int(col_starts[c]), k, largest, servers)
                     for c in range(blocks.shape[1])]
            while len(level) > 1:
                level = [delayed(_combine_topk, pure=False)(level[i:i + split_every], k, largest, servers)
                         for i in range(0, len(level), split_every)]
            shape = (k,) if darr.ndim == 1 else (row_chunks[r], k)
            values_out.append(dask.array.from_delayed(level[0][0], shape=shape, dtype=darr.dtype))
            indices_out.append(dask.array.from_delayed(level[0][1], shape=shape, dtype=np.int64))
    if darr.ndim == 1:
        return values_out[0], indices_out[0]
    return dask.array.concatenate(values_out, axis=0), dask.array.concatenate(indices_out, axis=0)
