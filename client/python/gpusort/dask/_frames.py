"""Dask DataFrames sorted and selected by a numeric key column on gpusort servers.

sort_values: the plan of _arrays.sort, with rows carried by gpusort's argsort: each partition's rows
ordered by its key column (rows whose key is NaN set aside, as pandas puts them last), splitters from
every partition's quantiles, each sorted partition cut into one piece per bucket, each bucket's rows
ordered again by gpusort; the NaN rows last (in the last bucket), in their partitions' order. A row's position is its
partition's number and its place in it, so ties keep the dataset's order, as pandas'
sort_values(kind="stable") keeps them, in both directions.

nlargest / nsmallest: each partition's top n rows by gpusort's top-k on the column (rows with NaN keys
after all others, as pandas' sort_values(...).head(n)), then a tree of top-ks over the candidate rows,
ties to the earlier row (pandas' keep="first").
"""
from typing import Any, List, Sequence, Tuple, Union

import numpy as np

from . import _servers, _split
from ._arrays import SAMPLES_PER_BUCKET, _splitters
from ._servers import Servers

POSITION_BITS = 40  # a row's position: partition number << 40 | its place in the partition

Part = Tuple[Any, _split.Sorted, Any]  # (rows ordered by key, their (keys, positions), rows with NaN keys)


def _dask() -> Any:
    import dask
    import dask.dataframe

    return dask


def _keys(frame: Any, by: str) -> Tuple["np.ndarray[Any, Any]", "np.ndarray[Any, Any]"]:
    """The key column as numpy, and which rows have a NaN key (floats only)."""
    keys = frame[by].to_numpy()
    if keys.dtype.kind not in "iuf":
        raise TypeError("gpusort.dask: the key column %r is %s, not numeric" % (by, keys.dtype))
    nan = np.isnan(keys) if keys.dtype.kind == "f" else np.zeros(len(keys), dtype=bool)
    return keys, nan


def _concat(frames: Sequence[Any]) -> Any:
    """pd.concat of the frames, with float columns joined as numpy joins them: pandas' concat refills a
    frame's all-NaN float column with its own NaN, losing the payloads and signs the answer must keep."""
    import pandas as pd

    out = pd.concat(list(frames))
    if out.columns.is_unique:
        for column in out.columns:
            kinds = {getattr(f[column].dtype, "kind", "O") for f in frames}
            if kinds == {"f"} and len({f[column].dtype for f in frames}) == 1:
                out[column] = np.concatenate([f[column].to_numpy() for f in frames])
    return out


def _sort_partition(frame: Any, number: int, by: str, ascending: bool, servers: Servers) -> Part:
    keys, nan = _keys(frame, by)
    has_nan = bool(nan.any())
    rows = frame[~nan] if has_nan else frame
    keys = np.ascontiguousarray(keys[~nan] if has_nan else keys)
    places = np.flatnonzero(~nan).astype(np.int64) if has_nan else None
    positions = np.zeros(0, dtype=np.int64)
    if len(keys) > 0:
        # positions by the order only where NaN rows left gaps
        keys, order = _servers.sorted_with_order(servers, keys, descending=not ascending)
        rows = rows.iloc[order]
        positions = (places[order] if places is not None else order) + (np.int64(number) << POSITION_BITS)
    return rows, (keys, positions), frame[nan]


def _samples(part: Part, count: int) -> _split.Sorted:
    return _split.sample(part[1], count)


def _cut(part: Part, splitters: _split.Sorted, descending: bool) -> List[Any]:
    """The sorted partition's rows for every bucket, then its NaN-key rows, in one task where the
    partition lies (a task per piece could run elsewhere and pull the whole partition to it). The rows
    alone travel: the bucket reads its keys from them, and needs no positions (below). The NaN-key rows
    are a piece of their own so that no bucket depends on the whole partition: the last one did, and
    kept every sorted partition in memory until it ran."""
    offsets = _split.bounds(part[1], splitters, descending)
    return [part[0].iloc[b:e] for b, e in zip(offsets[:-1].tolist(), offsets[1:].tolist())] + [part[2]]


def _sort_bucket(pieces: Sequence[Any], by: str, ascending: bool, servers: Servers,
                 nan_rows: Sequence[Any] = ()) -> Any:
    """A bucket's rows in order; the last bucket then takes every partition's NaN-key rows, in partition
    order. (In a partition of their own, an all-NaN key column would lose its NaN payloads and signs
    in compute(): pandas' concat refills all-NaN columns with its own NaN.)"""
    rows = _concat(pieces)
    keys = np.ascontiguousarray(rows[by].to_numpy())
    if len(keys) > 1:  # pieces in partition order, each in (key, position) order: a stable sort by key
        # alone keeps equal keys in the dataset's order
        order = _servers.call(servers, lambda c: c.argsort(keys, descending=not ascending))
        rows = rows.iloc[order]
    if nan_rows:
        rows = _concat([rows] + list(nan_rows))
    return rows


def sort_values(ddf: Any, by: str, ascending: bool = True, servers: Union[None, str, Sequence[str], Servers] = None,
                *, retries: int = 2) -> Any:
    """ddf.sort_values(by, ascending=ascending, kind="stable") for a numeric column `by`: a Dask
    DataFrame of one partition per input partition, divisions unknown."""
    dask = _dask()
    servers = _servers.as_servers(servers)
    delayed = dask.delayed
    frames = list(ddf.to_delayed())
    count = len(frames)
    with dask.annotate(retries=retries):
        parts = [delayed(_sort_partition, pure=False)(f, i, by, ascending, servers) for i, f in enumerate(frames)]
        samples = [delayed(_samples, pure=False)(p, SAMPLES_PER_BUCKET * count) for p in parts]
        splitters = delayed(_splitters, pure=False)(samples, count, servers, not ascending)
        cuts = [delayed(_cut, pure=False, nout=count + 1)(p, splitters, not ascending) for p in parts]
        buckets: List[Any] = []
        for j in range(count):
            nan_rows = [cut[count] for cut in cuts] if j == count - 1 else []
            buckets.append(delayed(_sort_bucket, pure=False)([cut[j] for cut in cuts], by, ascending, servers,
                                                           nan_rows))
    return dask.dataframe.from_delayed(buckets, meta=ddf._meta, verify_meta=False)


def _frame_top(frame: Any, column: str, n: int, largest: bool, servers: Servers) -> Any:
    """The frame's first n rows by `column` (pandas': sort_values(...).head(n), NaN keys last)."""
    keys, nan = _keys(frame, column)
    # Only the n rows chosen are copied: no copy of the frame without its NaN-key rows (at 16M rows a
    # partition that cost more than the selection).
    places = np.flatnonzero(~nan) if nan.any() else None
    keys = np.ascontiguousarray(keys if places is None else keys[places])
    take = min(n, len(keys))
    at = np.zeros(0, dtype=np.int64)
    if take > 0:
        _, at = _servers.call(servers, lambda c: c.topk(keys, take, largest=largest))
        at = at if places is None else places[at]
    rows = frame.iloc[at]
    if take < n:  # rows with NaN keys come after every other, in their order
        rows = _concat([rows, frame[nan].iloc[:n - take]])
    return rows


def _combine_top(frames: Sequence[Any], column: str, n: int, largest: bool, servers: Servers) -> Any:
    rows = _concat(frames)  # in partition order: ties keep to the earlier row
    return _frame_top(rows, column, n, largest, servers)


def _select(ddf: Any, n: int, column: str, largest: bool, servers: Union[None, str, Sequence[str], Servers],
            retries: int, split_every: int) -> Any:
    dask = _dask()
    servers = _servers.as_servers(servers)
    if int(n) < 0:
        raise ValueError("gpusort.dask: n = %d is negative" % n)
    delayed = dask.delayed
    split_every = max(2, int(split_every))
    with dask.annotate(retries=retries):
        level = [delayed(_frame_top, pure=False)(f, column, int(n), largest, servers) for f in ddf.to_delayed()]
        while len(level) > 1:
            level = [delayed(_combine_top, pure=False)(level[i:i + split_every], column, int(n), largest, servers)
                     for i in range(0, len(level), split_every)]
    return dask.dataframe.from_delayed(level, meta=ddf._meta, verify_meta=False)


def nlargest(ddf: Any, n: int, column: str, servers: Union[None, str, Sequence[str], Servers] = None, *,
             retries: int = 2, split_every: int = 8) -> Any:
    """ddf.nlargest(n, column) (keep="first") for a numeric column, as a one-partition Dask DataFrame."""
    return _select(ddf, n, column, True, servers, retries, split_every)


def nsmallest(ddf: Any, n: int, column: str, servers: Union[None, str, Sequence[str], Servers] = None, *,
              retries: int = 2, split_every: int = 8) -> Any:
    """ddf.nsmallest(n, column) (keep="first") for a numeric column, as a one-partition Dask DataFrame."""
    return _select(ddf, n, column, False, servers, retries, split_every)
