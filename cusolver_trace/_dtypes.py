"""The one place where dtypes are dispatched.

Every layer (raw cuSOLVER/cuBLAS bindings, scipy LAPACK, checks, flop counts)
asks :func:`dtype_info` for the LAPACK type prefix (``s``/``d``/``c``/``z``),
the ``cudaDataType`` enum value used by the 64-bit cuSOLVER API, and LAPACK's
machine epsilon, instead of repeating an ``if dtype == ...`` chain.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["DtypeInfo", "dtype_info", "SUPPORTED_DTYPES", "dtype_name"]


@dataclass(frozen=True)
class DtypeInfo:
    """Facts about one supported dtype.

    Attributes
    ----------
    name : str
        ``"float32"``, ``"float64"``, ``"complex64"`` or ``"complex128"``.
    prefix : str
        LAPACK / cuSOLVER / cuBLAS type letter: ``s``, ``d``, ``c``, ``z``.
    cuda_data_type : int
        ``cudaDataType`` value (``CUDA_R_32F`` = 0, ``CUDA_R_64F`` = 1,
        ``CUDA_C_32F`` = 4, ``CUDA_C_64F`` = 5), the ``dataTypeA`` /
        ``computeType`` of ``cusolverDnXpotrf`` and friends.
    is_complex : bool
    real_name : str
        The dtype of the real part (``float32`` for ``complex64``).
    lapack_eps : float
        LAPACK's ``?lamch('E')`` = 2**-24 (single) or 2**-53 (double): half of
        ``numpy.finfo(dtype).eps``.
    """

    name: str
    prefix: str
    cuda_data_type: int
    is_complex: bool
    real_name: str
    lapack_eps: float

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(self.name)

    @property
    def torch(self):
        import torch

        return getattr(torch, self.name)

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize


_TABLE = {
    "float32": DtypeInfo("float32", "s", 0, False, "float32", 2.0**-24),
    "float64": DtypeInfo("float64", "d", 1, False, "float64", 2.0**-53),
    "complex64": DtypeInfo("complex64", "c", 4, True, "float32", 2.0**-24),
    "complex128": DtypeInfo("complex128", "z", 5, True, "float64", 2.0**-53),
}
_BY_PREFIX = {v.prefix: v for v in _TABLE.values()}

SUPPORTED_DTYPES = tuple(_TABLE)


def dtype_name(dtype: Any) -> str:
    """Plain name of a torch, numpy or cupy dtype (or a string / prefix letter); None is
    refused (NumPy would read it as float64, a silent default)."""
    if dtype is None:
        raise TypeError("a dtype is required (float32, float64, complex64 or complex128), got None")
    if isinstance(dtype, str):
        if dtype in _BY_PREFIX:
            return _BY_PREFIX[dtype].name
        return dtype.removeprefix("torch.")
    s = str(dtype)
    if s.startswith("torch."):
        return s[len("torch."):]
    try:
        return np.dtype(dtype).name
    except TypeError:
        return s


def dtype_info(dtype: Any) -> DtypeInfo:
    """Look up a supported dtype.

    Parameters
    ----------
    dtype : torch.dtype, numpy.dtype, type or str
        ``"float64"``, ``torch.float64``, ``np.float64``, or a prefix letter
        ``"d"``.

    Raises
    ------
    TypeError
        If the dtype is not one of float32, float64, complex64, complex128
        (cuSOLVER's potrf family has no half, bfloat16, integer or bool
        variant; torch rejects them too).

    Examples
    --------
    >>> d = dtype_info("complex128")
    >>> d.prefix, d.itemsize, d.is_complex
    ('z', 16, True)
    >>> dtype_info("float16")
    Traceback (most recent call last):
    ...
    TypeError: unsupported dtype float16: cuSOLVER/LAPACK routines take float32, float64, complex64, complex128
    """
    try:  # the hot path: a dtype object seen before (torch / numpy dtypes are hashable)
        return _SEEN[dtype]
    except (KeyError, TypeError):
        pass
    name = dtype_name(dtype)
    try:
        info = _TABLE[name]
    except KeyError:
        raise TypeError(
            f"unsupported dtype {name}: cuSOLVER/LAPACK routines take "
            f"{', '.join(SUPPORTED_DTYPES)}"
        ) from None
    try:
        if len(_SEEN) < 64:
            _SEEN[dtype] = info
    except TypeError:  # unhashable: not cached
        pass
    return info


_SEEN: dict = {}  # dtype object -> DtypeInfo, filled by dtype_info
