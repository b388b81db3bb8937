"""Checks on what the server answered, before any of it reaches the caller (issue 41).

The client must not trust a reply because its status is OK: a wrong length would surface as numpy's
ValueError or IndexError, a stream that skips elements would hand back the unfilled bytes of an
np.empty output (memory the process freed earlier), and indices outside their row would gather another
row's values without a word. Every check here raises BadAnswerError (a GpusortError, code DATA_LOSS).
Messages carry numbers only, never bytes the server sent.
"""
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Set, Union

import numpy as np

from .errors import BadAnswerError

if TYPE_CHECKING:
    import numpy.typing as npt  # for the annotations only: no import at run time


def array_of(data: bytes, count: int, dtype: "npt.DTypeLike", what: str) -> "npt.NDArray[Any]":
    """The reply field `data` as `count` elements of `dtype` (a read-only view on it); BadAnswerError
    unless it holds exactly that many bytes. `what` names the field (the client's own words)."""
    dtype = np.dtype(dtype)
    if len(data) != count * dtype.itemsize:
        raise BadAnswerError("the server's %s hold %d bytes where %d elements of %d bytes were due"
                             % (what, len(data), count, dtype.itemsize))
    return np.frombuffer(data, dtype=dtype)


class StreamAnswer:
    """An answer stream's chunks copied into `outputs` ({reply field: numpy array of the answer's
    length}), checked as sort.proto promises them: in order, each starting where the last ended, whole
    elements, the same elements in every field asked for, none past the end, and (finish) all of them.
    Offsets that merely stayed inside the array are not enough: a chunk repeated at offset 0 would leave
    the rest unwritten. `wire` gives each field's dtype on the wire (little-endian)."""

    def __init__(self, outputs: Dict[str, "npt.NDArray[Any]"], wire: Mapping[str, "npt.DTypeLike"]) -> None:
        self._outputs = outputs
        self._wire = {name: np.dtype(wire[name]) for name in outputs}
        self._count = next(iter(outputs.values())).size if outputs else 0
        self._next = 0  # elements received: where the next chunk must start

    def take(self, reply: Any) -> None:  # reply: a generated stream response (untyped)
        pieces: Dict[str, bytes] = {name: getattr(reply, name) for name in self._outputs}
        if not any(pieces.values()):
            return  # a message with no data (the last may carry only `info`) fills nothing
        size = self._elements(pieces)
        if reply.offset != self._next:
            raise BadAnswerError("the server's answer stream skipped or repeated elements: a chunk at offset "
                                 "%d where %d was due" % (reply.offset, self._next))
        if size > self._count - self._next:
            raise BadAnswerError("the server's answer stream runs past its %d elements (a chunk of %d at "
                                 "offset %d)" % (self._count, size, reply.offset))
        for name, data in pieces.items():
            self._outputs[name][self._next:self._next + size] = np.frombuffer(data, dtype=self._wire[name])
        self._next += size

    def _elements(self, pieces: Mapping[str, bytes]) -> int:
        """How many elements the chunk holds: the same whole number in every field asked for."""
        counts: Set[int] = set()
        for name, data in pieces.items():
            width = self._wire[name].itemsize
            if len(data) % width:
                raise BadAnswerError("a chunk of the server's answer stream ends inside an element (%d bytes "
                                     "of %d-byte elements)" % (len(data), width))
            counts.add(len(data) // width)
        if len(counts) != 1:
            raise BadAnswerError("a chunk of the server's answer stream holds different numbers of elements "
                                 "in its fields (%s)" % ", ".join(str(c) for c in sorted(counts)))
        return counts.pop()

    def finish(self) -> None:
        """After the stream ended OK: BadAnswerError unless every element came."""
        if self._next != self._count:
            raise BadAnswerError("the server's answer stream ended after %d of its %d elements"
                                 % (self._next, self._count))


def check_indices(indices: "npt.NDArray[np.int64]", limits: Union[int, "npt.NDArray[np.int64]"],
                  counts: Optional["npt.NDArray[np.int64]"] = None) -> None:
    """Indices answered in groups (rows or segments) each count from their group's start, as sort.proto
    says: group g's counts[g] entries must lie in [0, limits[g]). A single number `limits` holds for
    every entry (rows of equal length); `counts` is then not needed."""
    indices = indices.reshape(-1)
    if not indices.size:
        return
    if int(indices.min()) < 0:
        raise BadAnswerError("the server answered a negative index (%d)" % int(indices.min()))
    if np.ndim(limits) == 0:
        if int(indices.max()) >= int(limits):
            raise BadAnswerError("the server answered index %d in a row of %d elements"
                                 % (int(indices.max()), int(limits)))
        return
    limits = np.asarray(limits, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if int(counts.sum()) != indices.size:  # the callers check lengths first; reduceat needs it to hold
        raise BadAnswerError("the server answered %d indices where %d were due" % (indices.size, int(counts.sum())))
    # The largest index of each non-empty group, without an n-sized array of limits: the non-empty
    # groups' starts cut the answer into exactly those groups.
    filled = counts > 0
    starts = (np.cumsum(counts) - counts)[filled]
    largest = np.maximum.reduceat(indices, starts)
    over = np.flatnonzero(largest >= limits[filled])
    if over.size:
        first = over[0]
        raise BadAnswerError("the server answered index %d in a row or segment of %d elements"
                             % (int(largest[first]), int(limits[filled][first])))


def check_device_indices(indices: Any, limit: Any) -> None:  # torch or CuPy arrays
    """check_indices for indices in GPU memory (torch or CuPy arrays, whose comparisons run on the GPU):
    each entry in [0, limit), `limit` a number or an array of one limit per entry. Checked before the
    client gathers with them: out of range, torch's gather stops the GPU's context and CuPy's wraps."""
    if bool(((indices < 0) | (indices >= limit)).any()):
        raise BadAnswerError("the server answered indices outside their rows or segments")
