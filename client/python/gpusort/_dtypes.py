"""numpy dtypes <-> the proto's DType, and the NaN and zero rules of nan="numpy" (see _client.py).

bfloat16 has no numpy dtype: an array of its bits (uint16 or int16) is sent as bfloat16 when the caller
says dtype="bfloat16" (torch bfloat16 tensors are handled that way by _arrays.py).
"""
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Type

import numpy as np

from .v1 import sort_pb2 as pb

if TYPE_CHECKING:
    import numpy.typing as npt  # for the annotations only: no import at run time

# numpy kind+itemsize -> DType
_BY_NUMPY: Dict[Tuple[str, int], int] = {
    ("i", 1): pb.DTYPE_INT8,
    ("u", 1): pb.DTYPE_UINT8,
    ("i", 2): pb.DTYPE_INT16,
    ("u", 2): pb.DTYPE_UINT16,
    ("i", 4): pb.DTYPE_INT32,
    ("u", 4): pb.DTYPE_UINT32,
    ("i", 8): pb.DTYPE_INT64,
    ("u", 8): pb.DTYPE_UINT64,
    ("f", 2): pb.DTYPE_FLOAT16,
    ("f", 4): pb.DTYPE_FLOAT32,
    ("f", 8): pb.DTYPE_FLOAT64,
}

_BY_NAME: Dict[str, int] = {
    "int8": pb.DTYPE_INT8, "uint8": pb.DTYPE_UINT8, "int16": pb.DTYPE_INT16, "uint16": pb.DTYPE_UINT16,
    "int32": pb.DTYPE_INT32, "uint32": pb.DTYPE_UINT32, "int64": pb.DTYPE_INT64, "uint64": pb.DTYPE_UINT64,
    "float16": pb.DTYPE_FLOAT16, "float32": pb.DTYPE_FLOAT32, "float64": pb.DTYPE_FLOAT64,
    "bfloat16": pb.DTYPE_BFLOAT16,
}

SUPPORTED = sorted(_BY_NAME)

# Float DTypes: (bits dtype, sign bit, canonical quiet NaN, exponent mask) for the nan="numpy" rules.
FloatBits = Tuple[Type["np.unsignedinteger[Any]"], int, int, int]
_FLOAT_BITS: Dict[int, FloatBits] = {
    pb.DTYPE_FLOAT16: (np.uint16, 0x8000, 0x7E00, 0x7C00),
    pb.DTYPE_BFLOAT16: (np.uint16, 0x8000, 0x7FC0, 0x7F80),
    pb.DTYPE_FLOAT32: (np.uint32, 0x80000000, 0x7FC00000, 0x7F800000),
    pb.DTYPE_FLOAT64: (np.uint64, 0x8000000000000000, 0x7FF8000000000000, 0x7FF0000000000000),
}


def dtype_of(array: "npt.NDArray[Any]", name: Optional[str] = None) -> int:
    """The proto DType for `array` (a numpy array), or for `name` ("bfloat16", ...) given with an array
    of the same width. ValueError naming the supported dtypes otherwise."""
    return dtype_for(array.dtype, name)


def dtype_for(np_dtype: "npt.DTypeLike", name: Optional[str] = None) -> int:
    """dtype_of for arrays known by their numpy dtype only (CUDA arrays)."""
    array = np.empty(0, dtype=np_dtype)
    if name is not None:
        key = str(name).lower()
        if key not in _BY_NAME:
            raise ValueError("gpusort: unknown dtype %r; supported: %s" % (name, ", ".join(SUPPORTED)))
        dtype = _BY_NAME[key]
        if width(dtype) != array.dtype.itemsize:
            raise ValueError("gpusort: dtype %s takes %d-byte elements, the array has %d-byte ones"
                             % (key, width(dtype), array.dtype.itemsize))
        return dtype
    found = _BY_NUMPY.get((array.dtype.kind, array.dtype.itemsize))
    if found is None:
        raise ValueError("gpusort: cannot sort arrays of %s; supported: %s (bfloat16: pass its bits as "
                         "uint16 with dtype='bfloat16')" % (array.dtype, ", ".join(SUPPORTED)))
    return found


def width(dtype: int) -> int:
    return {pb.DTYPE_INT8: 1, pb.DTYPE_UINT8: 1, pb.DTYPE_INT16: 2, pb.DTYPE_UINT16: 2, pb.DTYPE_FLOAT16: 2,
            pb.DTYPE_BFLOAT16: 2, pb.DTYPE_INT32: 4, pb.DTYPE_UINT32: 4, pb.DTYPE_FLOAT32: 4,
            pb.DTYPE_INT64: 8, pb.DTYPE_UINT64: 8, pb.DTYPE_FLOAT64: 8}[dtype]


def float_bits(dtype: int) -> Optional[FloatBits]:
    """(bits dtype, sign bit, canonical quiet NaN, exponent mask) of a float DType; None for integers."""
    return _FLOAT_BITS.get(dtype)


_SPECIALS_SLICE = 1 << 16  # elements numpy_specials looks at in one go


def _any_special(bits: "npt.NDArray[Any]", sign: Any, magnitude_mask: Any, exponent: Any) -> bool:
    """Whether any element is a NaN (its magnitude's bits above +inf's) or -0.0 (the sign bit alone),
    by two reductions a cache-sized slice and no mask written: most arrays hold neither, and for them
    this is the whole check (16M float64: 21-25 ms against 41 ms for building the masks; float32 11-14
    against 33, dev VM)."""
    scratch = np.empty(min(bits.size, _SPECIALS_SLICE), dtype=bits.dtype)
    for start in range(0, bits.size, _SPECIALS_SLICE):
        part = bits[start:start + _SPECIALS_SLICE]
        view = scratch[:part.size]
        np.bitwise_and(part, magnitude_mask, out=view)
        if view.max() > exponent:
            return True
        np.bitwise_xor(part, sign, out=view)  # zero exactly where part is -0.0
        if view.min() == 0:
            return True
    return False


def numpy_specials(bits_array: "npt.NDArray[Any]", dtype: int
                   ) -> Tuple[Optional["npt.NDArray[np.bool_]"], Optional["npt.NDArray[Any]"]]:
    """For nan="numpy": a mask of the elements numpy orders differently from the proto's total order
    (NaNs of either sign or payload, which numpy puts after +inf and keeps in position order; -0.0, which
    numpy holds equal to +0.0), and a copy of the keys with those replaced by the canonical quiet NaN
    and +0.0, so that the server's total order ranks them as numpy does and breaks their ties by
    position. None, None for integer dtypes or when nothing differs."""
    if dtype not in _FLOAT_BITS:
        return None, None
    bits_type, sign, quiet_nan, exponent = _FLOAT_BITS[dtype]
    bits = bits_array.view(bits_type)
    magnitude_mask = bits_type(~sign & ((1 << (8 * bits.dtype.itemsize)) - 1))
    if not _any_special(bits, bits_type(sign), magnitude_mask, bits_type(exponent)):
        return None, None
    nan = np.empty(bits.shape, dtype=bool)
    negative_zero = np.empty(bits.shape, dtype=bool)
    special = np.empty(bits.shape, dtype=bool)
    # In slices that stay in cache: the whole array's temporaries (a magnitude the keys' size) made this
    # check 3-4x slower than the copy into the shared-memory region that follows it.
    magnitude = np.empty(min(bits.size, _SPECIALS_SLICE), dtype=bits_type)
    for start in range(0, bits.size, _SPECIALS_SLICE):
        part = bits[start:start + _SPECIALS_SLICE]
        scratch = magnitude[:part.size]
        np.bitwise_and(part, magnitude_mask, out=scratch)
        np.greater(scratch, bits_type(exponent), out=nan[start:start + part.size])
        np.equal(part, bits_type(sign), out=negative_zero[start:start + part.size])
        np.logical_or(nan[start:start + part.size], negative_zero[start:start + part.size],
                      out=special[start:start + part.size])
    canonical = bits.copy()
    canonical[nan] = bits_type(quiet_nan)
    canonical[negative_zero] = bits_type(0)
    return special, canonical
