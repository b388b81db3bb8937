"""What callers pass -> numpy arrays the client sends, and the answers back in the caller's kind.

numpy arrays of any byte order and memory layout; anything numpy can read through the array protocols
(torch CPU tensors, lists); torch bfloat16 CPU tensors by their bits. CUDA arrays never come here: they
go through the service's device-memory regions (_device.py); a CUDA array met here (values given with
host keys) is refused rather than copied to the host behind the caller's back.
"""
from typing import TYPE_CHECKING, Any, Callable, Optional, Tuple

import numpy as np

from ._device import is_cuda

if TYPE_CHECKING:
    import numpy.typing as npt  # for the annotations only: no import at run time


class Converted:
    """A caller's array as numpy (native layout kept), the dtype name it is sent as (None: by numpy's
    dtype), and how to hand numpy answers back in the caller's kind."""

    def __init__(self, array: "npt.NDArray[Any]", dtype_name: Optional[str] = None,
                 back: Optional[Callable[["npt.NDArray[Any]"], Any]] = None,
                 indices_back: Optional[Callable[["npt.NDArray[Any]"], Any]] = None) -> None:
        self.array = array
        self.dtype_name = dtype_name
        self._back = back
        self._indices_back = indices_back

    def back(self, result: "npt.NDArray[Any]") -> Any:
        """`result` (numpy, of the array's own dtype) as the caller's kind: a torch tensor over the
        same memory for torch callers, the numpy array itself otherwise."""
        return result if self._back is None else self._back(result)

    def indices_back(self, indices: Optional["npt.NDArray[Any]"]) -> Any:
        """Positions (numpy int64) as the caller's kind: an int64 tensor for torch callers, as
        torch.sort and torch.topk give them."""
        return indices if self._indices_back is None or indices is None else self._indices_back(indices)


def to_numpy(obj: Any, dtype_name: Optional[str] = None, keys: bool = True) -> Converted:
    """`obj` as numpy without a copy where numpy can view it: a torch CPU tensor's own memory
    (Tensor.numpy()); the answers handed back to a torch caller are tensors over the answers' memory
    (torch.from_numpy), so neither way copies more than a numpy caller's call does."""
    if is_cuda(obj):
        raise ValueError("gpusort: keys and values must both be on the host or both on a GPU; these values "
                         "are a CUDA array and the keys are not")
    module = type(obj).__module__.split(".")[0]
    if module == "torch":
        import torch  # only when the caller already uses it

        def as_tensor(r: "npt.NDArray[Any]") -> Any:
            return torch.from_numpy(np.ascontiguousarray(r))

        tensor = obj.detach()
        if tensor.dtype == torch.bfloat16:
            bits = tensor.contiguous().view(torch.int16).numpy()
            return Converted(bits, "bfloat16", lambda r: as_tensor(r.view(np.int16)).view(torch.bfloat16), as_tensor)
        return Converted(tensor.numpy(), dtype_name, as_tensor, as_tensor)
    array = np.asarray(obj)
    if keys and array.dtype.kind not in "iuf":
        from ._dtypes import SUPPORTED

        raise ValueError("gpusort: cannot sort arrays of %s; supported: %s" % (array.dtype, ", ".join(SUPPORTED)))
    return Converted(array, dtype_name)


def little_endian_rows(array: "npt.NDArray[Any]", axis: int) -> Tuple["npt.NDArray[Any]", Tuple[int, ...]]:
    """The array with `axis` last, C-contiguous and little-endian: (data, shape with axis last).
    Raises numpy's AxisError for an axis the array does not have."""
    if array.ndim == 0:
        raise np.exceptions.AxisError(axis, 0) if hasattr(np, "exceptions") else np.AxisError(axis, 0)
    moved = np.moveaxis(array, axis, -1)
    data = np.ascontiguousarray(moved)
    if data.dtype.byteorder == ">" or (data.dtype.byteorder == "=" and np.little_endian is False):
        data = data.astype(data.dtype.newbyteorder("<"))
    return data, moved.shape


def restore_axis(result: "npt.NDArray[Any]", shape: Tuple[int, ...], axis: int, ndim: int,
                 dtype: Optional["np.dtype[Any]"] = None) -> "npt.NDArray[Any]":
    """A flat result of `shape` (axis last) back to the caller's axis (and dtype, byte order included)."""
    out = np.moveaxis(result.reshape(shape), -1, axis if axis >= 0 else ndim + axis)
    if dtype is not None and out.dtype != dtype:
        out = out.astype(dtype)
    return out
