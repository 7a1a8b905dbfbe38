"""Input kinds and validation shared by every array-level routine.

Accepted: torch tensors (CUDA -> cuSOLVER; CPU -> LAPACK), CuPy arrays (->
cuSOLVER, zero-copy through DLPack) and NumPy arrays (-> LAPACK). Results come
back as the kind that went in. Validation happens before any work (SciPy /
``cupyx.lapack`` order): kind, ndim, square, dtype, device.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence, Union

import numpy as np

from ._dtypes import DtypeInfo, dtype_info

if TYPE_CHECKING:  # pragma: no cover - names for the annotations only
    import cupy
    import torch

#: What an array argument of a public routine may be: a torch tensor (CUDA → cuSOLVER, CPU →
#: LAPACK), a CuPy array, a NumPy array, or a nested list of floats (read as a NumPy array).
ArrayLike = Union["torch.Tensor", np.ndarray, "cupy.ndarray", Sequence[Sequence[Any]]]
#: What a public routine returns: the kind of array that went in (a nested list: NumPy).
Array = Union["torch.Tensor", np.ndarray, "cupy.ndarray"]


@dataclass
class Operand:
    """One validated input: ``data`` is a torch tensor (cuda/cupy kinds) or a NumPy array (cpu)."""

    kind: str  # "torch", "cupy", "numpy"
    data: object
    dtype: DtypeInfo
    on_gpu: bool
    shape: tuple = ()   # data's shape, taken once (a torch shape is a new tuple per access)

    @property
    def batch_shape(self):
        return self.shape[:-2]


def _is_torch(x):
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


_TORCH = []


def _torch():
    """The torch module once imported (None when it cannot be): one list lookup per call."""
    if not _TORCH:
        try:
            import torch
        except ImportError:  # pragma: no cover - torch is a dependency
            torch = None
        _TORCH.append(torch)
    return _TORCH[0]


def _is_cupy(x):
    mod = type(x).__module__
    return mod.startswith("cupy") and hasattr(x, "__dlpack__")


def _from_nested(x, name: str) -> np.ndarray:
    """A nested list / tuple of numbers as a NumPy array, or one error naming the argument.

    Raises
    ------
    ValueError
        Ragged: rows of different lengths (NumPy's own message names no argument).
    TypeError
        Entries that are not floating-point or complex numbers (strings, None, objects, or
        integers / bools: a nested list has no dtype of its own to keep, and converting
        integers would be a silent choice of precision).
    """
    try:
        data = np.asarray(x)
    except (ValueError, TypeError, OverflowError) as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "inhomogeneous" in text or "sequence" in text:
            raise ValueError(f"{name}: a ragged nested list (its rows have different lengths, or "
                             f"a number stands where a row should be); NumPy says: {text}") from None
        raise TypeError(f"{name}: a nested list that is not an array of numbers ({text})") from None
    kind = data.dtype.kind
    if kind in "iub":
        raise TypeError(f"{name}: a nested list of {'bools' if kind == 'b' else 'integers'}; write "
                        "floating-point numbers (4.0, not 4) or pass an array of float32, "
                        "float64, complex64 or complex128")
    if kind not in "fc":
        raise TypeError(f"{name}: a nested list with entries that are not numbers (NumPy reads "
                        f"it as {data.dtype}); expected float or complex numbers")
    return data


def operand(x, name: str) -> Operand:
    """Classify and validate ``x`` (at least 2-D, supported dtype).

    Parameters
    ----------
    x : torch.Tensor, cupy.ndarray, numpy.ndarray, or nested list / tuple of numbers
        The array argument.
    name : str
        The argument's name (``"A"``, ``"L"``, ``"B"``), which every error here starts with.

    Returns
    -------
    Operand

    Raises
    ------
    TypeError
        Unsupported array type or dtype (names the supported dtypes), a masked array, or a
        nested list whose entries are not floating-point / complex numbers. A subclass of
        ``numpy.ndarray`` (``numpy.matrix``) is read as a plain array.
    ValueError
        Fewer than 2 dimensions, a ragged nested list, a device other than cuda / cpu.

    Examples
    --------
    >>> operand([[4.0, 2.0], [2.0, 3.0]], "A").shape
    (2, 2)
    >>> operand([[1.0], [1.0, 2.0]], "A")
    Traceback (most recent call last):
    ...
    ValueError: A: a ragged nested list ...
    >>> operand([["a", "b"], ["c", "d"]], "B")
    Traceback (most recent call last):
    ...
    TypeError: B: a nested list with entries that are not numbers (NumPy reads it as <U1); ...
    """
    if _is_torch(x):
        torch = _TORCH[0]
        if x.layout != torch.strided:
            raise TypeError(f"{name}: sparse or non-strided tensors are not supported")
        kind, on_gpu = "torch", x.is_cuda
        if not on_gpu and x.device.type != "cpu":
            raise ValueError(f"{name}: device {x.device} is not supported (use cuda or cpu)")
        # requires_grad inputs are read as values; results track no gradient (detach only
        # then: it builds a new tensor, ~2 µs of a call's host time)
        data = x.detach() if x.requires_grad else x
    elif _is_cupy(x):
        kind, on_gpu = "cupy", True
        data = None  # converted after the checks below
    elif isinstance(x, (list, tuple)):
        kind, on_gpu = "numpy", False
        data = _from_nested(x, name)
    elif isinstance(x, np.ndarray):
        kind, on_gpu = "numpy", False
        if isinstance(x, np.ma.MaskedArray):
            raise TypeError(f"{name}: a masked array (its mask would be ignored); pass "
                            f"x.filled(value) or x.data")
        # subclasses (np.matrix) as plain arrays: their operators and shapes differ
        data = x if type(x) is np.ndarray else x.view(np.ndarray)
        if data.dtype.kind in "fc" and not data.dtype.isnative:  # big-endian: a native copy
            data = data.astype(data.dtype.newbyteorder("="))
    else:
        raise TypeError(
            f"{name}: expected a torch.Tensor, cupy.ndarray, numpy.ndarray or a nested list, got "
            f"{type(x).__name__}"
        )
    shape = tuple(x.shape if data is None else data.shape)
    if len(shape) < 2:
        raise ValueError(f"{name}: expected a matrix or a batch of matrices (at least 2-D), got "
                         f"{len(shape)}-D input of shape {shape}")
    try:
        dt = dtype_info(x.dtype if data is None else data.dtype)
    except TypeError as exc:
        raise TypeError(f"{name}: {exc}") from None
    if data is None:
        import torch

        data = torch.from_dlpack(x)
    return Operand(kind, data, dt, on_gpu, shape)


def require_square(op: Operand, name: str) -> int:
    n, m = op.shape[-2:]
    if n != m:
        raise ValueError(f"{name}: expected square matrices (..., n, n), got shape {op.shape}")
    return n


def same_backend(a: Operand, b: Operand, names=("L", "B")) -> None:
    """Both on the GPU (same device) or both on the CPU; same dtype."""
    if a.on_gpu != b.on_gpu:
        where = lambda o: str(o.data.device) if o.on_gpu else "cpu"  # noqa: E731
        raise ValueError(f"{names[0]} is on {where(a)} but {names[1]} is on {where(b)}: "
                         "move both to the same device")
    if a.on_gpu and a.data.device != b.data.device:
        raise ValueError(f"{names[0]} is on {a.data.device} but {names[1]} is on {b.data.device}")
    if a.dtype != b.dtype:
        raise TypeError(f"{names[0]} has dtype {a.dtype.name} but {names[1]} has {b.dtype.name}: "
                        "they must match")


def as_numpy(op: Operand) -> np.ndarray:
    """NumPy view of a CPU operand with conjugate / negative bits resolved (may share memory)."""
    if op.kind == "numpy":
        return op.data
    return op.data.resolve_conj().resolve_neg().numpy()


def wrap(result, like: Operand):
    """Return ``result`` (torch tensor or NumPy array) as the kind of ``like``."""
    if like.kind == "numpy":
        return result if isinstance(result, np.ndarray) else result.cpu().numpy()
    if like.kind == "cupy":
        import cupy

        return cupy.from_dlpack(result)
    if isinstance(result, np.ndarray):
        import torch

        return torch.from_numpy(result)
    return result


def flag(value, name: str) -> bool:
    """A boolean argument (``upper``, ``check``, ...), checked: a string such as ``"False"``
    must not silently mean True.

    Raises
    ------
    TypeError
        Not a bool (``numpy.bool_`` is accepted).
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {value!r}")
