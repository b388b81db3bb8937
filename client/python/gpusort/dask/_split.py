"""Where sorted blocks split among the buckets of a distributed sort (pure numpy, no server).

Keys are ordered with their positions in the whole dataset: (key, position), lexicographically, in
numpy's order of the keys (NaN after +inf, -0.0 equal to +0.0: gpusort's nan="numpy"), descending keys
where asked, positions always ascending. Splitters are (key, position) pairs, so a key shared by most of
the dataset still spreads over several buckets, each taking its equals in position order: the bucket
sizes follow the samples, never the duplicates. Every block reaches here sorted by gpusort (stably:
equal keys in position order), with its keys' positions beside them.
"""
from typing import Any, List, Sequence, Tuple

import numpy as np

Sorted = Tuple["np.ndarray[Any, Any]", "np.ndarray[Any, Any]"]  # (keys, int64 positions), sorted


def sample(block: Sorted, count: int) -> Sorted:
    """`count` evenly spaced (by rank) keys of a sorted block, with their positions: the block's
    quantiles."""
    keys, positions = block
    if len(keys) == 0 or count <= 0:
        return keys[:0], positions[:0]
    at = np.unique(np.linspace(0, len(keys) - 1, min(count, len(keys))).astype(np.int64))
    return keys[at], positions[at]


def pick(ordered: Sorted, parts: int) -> Sorted:
    """parts - 1 splitters at even ranks of the samples, already in (key, position) order."""
    keys, positions = ordered
    if parts <= 1 or len(keys) == 0:
        return keys[:0], positions[:0]
    ranks = (np.arange(1, parts) * len(keys)) // parts
    return keys[ranks], positions[ranks]


def bounds(block: Sorted, splitters: Sorted, descending: bool) -> "np.ndarray[Any, Any]":
    """len(splitters) + 2 offsets into the block: bucket j takes [out[j], out[j + 1]), the block's
    (key, position) pairs ordered before splitter j and not before splitter j - 1."""
    keys, positions = block
    split_keys, split_positions = splitters
    n = len(keys)
    if descending:  # keys descending: search the reversed (ascending) view
        ascending = keys[::-1]
        before = n - np.searchsorted(ascending, split_keys, side="right")  # keys after the splitter's
        through = n - np.searchsorted(ascending, split_keys, side="left")
    else:
        before = np.searchsorted(keys, split_keys, side="left")
        through = np.searchsorted(keys, split_keys, side="right")
    out = np.empty(len(split_keys) + 2, dtype=np.int64)
    out[0], out[-1] = 0, n
    for j in range(len(split_keys)):  # among the splitter's equals, those at earlier positions
        lo, hi = int(before[j]), int(through[j])
        out[j + 1] = lo + int(np.searchsorted(positions[lo:hi], split_positions[j], side="left"))
    return out


def concat(pieces: Sequence[Sorted]) -> Sorted:
    """The pieces' keys and positions, end to end (in the order given)."""
    keys: List[Any] = [p[0] for p in pieces]
    positions: List[Any] = [p[1] for p in pieces]
    return np.concatenate(keys), np.concatenate(positions).astype(np.int64, copy=False)
