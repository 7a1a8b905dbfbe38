"""Shapes and keys of the fused (cuSOLVERDx) kernels: pure Python, tested without a GPU.

How a batch lies in memory (:func:`arrangement_of`), how many blocks it takes
(:func:`grid_size`, :func:`tail`), the shared memory of one block (:func:`shared_bytes`,
:func:`rhs_chunk`, :func:`fits`), :class:`FusedKey` (everything one compiled kernel depends
on) and :func:`plan_call` (how one call's buffers are handed to cuSOLVERDx: fill mode,
arrangements, conjugation). Every name is imported from :mod:`cusolver_trace.backends.fused`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

OPS = ("potrf", "inverse", "potrf_inverse", "solve")
"""Kernels: A → (L, info); L → A⁻¹; A → (A⁻¹, info); (L, B) → A⁻¹·B."""

#: Shared memory a block may use on sm_80 / sm_90 (227 KiB opt-in); smaller GPUs report
#: their own through the device attribute at launch time.
SMEM_LIMIT = 227 * 1024

#: Static shared memory the cuSOLVERDx functions add to every kernel (``.nv.shared`` of
#: each cubin compiled here: 1 KiB); kept free when sizing the dynamic part, checked again
#: against the loaded kernel's own figure.
CUSOLVERDX_STATIC_SMEM = 1024

_DTYPES = {  # name -> (C++ real type, is complex, itemsize)
    "float32": ("float", False, 4),
    "float64": ("double", False, 8),
    "complex64": ("float", True, 8),
    "complex128": ("double", True, 16),
}


def arrangement_of(shape, strides) -> str | None:
    """How the matrices of a ``(..., r, c)`` tensor lie in memory.

    Parameters
    ----------
    shape, strides : sequence of int
        Of the tensor, in elements (torch's ``.shape`` / ``.stride()``).

    Returns
    -------
    ``"row_major"`` when the whole tensor is one contiguous buffer of matrices stored row
    by row (C order), ``"col_major"`` when it is one of matrices stored column by column
    (``x.mT`` C-contiguous), None otherwise (the caller copies). Dimensions of size 1
    do not count; a 1 x 1 matrix is ``row_major``.

    Examples
    --------
    >>> arrangement_of((10, 4, 4), (16, 4, 1))
    'row_major'
    >>> arrangement_of((10, 4, 4), (16, 1, 4))
    'col_major'
    >>> arrangement_of((10, 4, 4), (32, 4, 1)) is None
    True
    """
    nd = len(shape)
    if nd < 2:
        raise ValueError(f"need (..., r, c), got shape {tuple(shape)}")
    # straight-line rather than a helper over both orders: the first ``auto`` call of a new
    # shape asks this, and its cost on a cold first call counted on the H200
    r, c, sr, sc = shape[-2], shape[-1], strides[-2], strides[-1]
    if (c == 1 or sc == 1) and (r == 1 or sr == c):
        arr = "row_major"
    elif (r == 1 or sr == 1) and (c == 1 or sc == r):
        arr = "col_major"
    else:
        return None
    expect = r * c   # the batch dimensions: one dense run of matrices, in C order
    for i in range(nd - 3, -1, -1):
        if shape[i] != 1 and strides[i] != expect:
            return None
        expect *= shape[i]
    return arr


def grid_size(batch: int, batches_per_block: int) -> int:
    """Thread blocks for ``batch`` matrices, ``batches_per_block`` per block (the last
    block may be partly empty: the kernel pads it with identity matrices and writes
    nothing back for them).

    Examples
    --------
    >>> grid_size(10, 4), grid_size(8, 4), grid_size(1, 32)
    (3, 2, 1)
    """
    if batch < 0 or batches_per_block < 1:
        raise ValueError(f"bad batch {batch} / batches_per_block {batches_per_block}")
    return -(-batch // batches_per_block)


def tail(batch: int, batches_per_block: int) -> int:
    """How many matrices the last block really holds (``batches_per_block`` when the
    batch divides evenly).

    Examples
    --------
    >>> tail(10, 4), tail(8, 4)
    (2, 4)
    """
    r = batch % batches_per_block
    return r if r else batches_per_block


def shared_bytes(op: str, n: int, kc: int, dtype: str, batches_per_block: int, pad: int = 0,
                 arr_b: str = "row_major") -> int:
    """Shared memory (bytes) of one block: ``batches_per_block`` matrices A (n x n, leading
    dimension n + pad), for the solving kernels as many right-hand-side chunks (n x kc,
    leading dimension kc + pad row-major or n + pad column-major), and four int32
    each (info and the check's); A is aligned to 16 bytes, each part rounded up to 16.

    Examples
    --------
    >>> shared_bytes("inverse", 32, 32, "float64", 1)
    16400
    """
    isz = _DTYPES[dtype][2]
    a = _round16(batches_per_block * n * (n + pad) * isz)
    one_b = n * (kc + pad) if arr_b == "row_major" else kc * (n + pad)
    b = _round16(batches_per_block * one_b * isz) if op != "potrf" else 0
    return a + b + _round16(16 * batches_per_block)   # 4 int32 per matrix: info and the check


def _round16(x: int) -> int:
    return -(-x // 16) * 16


def rhs_chunk(op: str, n: int, nrhs: int, dtype: str, batches_per_block: int,
              limit: int = SMEM_LIMIT, pad: int = 0, arr_b: str = "row_major") -> int:
    """Columns of the right-hand side solved per ``potrs`` call (the kernel loops over
    ``ceil(nrhs / kc)`` chunks): all of them when A and B fit in ``limit`` bytes of
    shared memory, else the largest power of two that fits. 0 for ``potrf`` (no right-hand side).

    Raises
    ------
    ValueError
        Not even one column fits next to A (n too large for this dtype): the fused
        method does not fall back by itself; ``method="auto"`` never picks it there.

    Examples
    --------
    >>> rhs_chunk("inverse", 32, 32, "float64", 1)
    32
    >>> rhs_chunk("inverse", 128, 128, "float64", 1)   # 128 KiB of A leaves room for 98 columns
    64
    """
    if op == "potrf":
        if shared_bytes(op, n, 0, dtype, batches_per_block, pad, arr_b) > limit:
            raise ValueError(_too_big(op, n, dtype, batches_per_block, limit))
        return 0
    kc = nrhs
    while kc >= 1 and shared_bytes(op, n, kc, dtype, batches_per_block, pad, arr_b) > limit:
        kc -= 1
    if kc < 1:
        raise ValueError(_too_big(op, n, dtype, batches_per_block, limit))
    if kc < nrhs:
        # chunks of a power-of-two width: with 95 columns per call (float64 n = 128) the
        # kernel ran at 17.8 ms per 100 matrices on the H200, 70x torch
        kc = 1 << (kc.bit_length() - 1)
    return kc


def _too_big(op, n, dtype, bpb, limit):
    return (f"fused {op}: n = {n} {dtype} with {bpb} matrices per block needs "
            f"{shared_bytes(op, n, 1 if op != 'potrf' else 0, dtype, bpb)} bytes of shared "
            f"memory, more than the {limit} a block can have; use another method "
            "(method='auto' falls back to torch)")


@functools.lru_cache(maxsize=4096)   # pure; asked on every method="auto" call
def fits(op: str, n: int, dtype: str, limit: int = SMEM_LIMIT) -> bool:
    """Whether the fused kernel can run ``op`` on n x n ``dtype`` matrices (one per block).

    Examples
    --------
    >>> fits("inverse", 128, "float64"), fits("inverse", 128, "complex128")
    (True, False)
    """
    try:
        rhs_chunk(op, n, max(n, 1), dtype, 1, limit - CUSOLVERDX_STATIC_SMEM)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class FusedKey:
    """Everything one compiled kernel depends on (besides library versions).

    Attributes
    ----------
    op : str
        One of :data:`OPS`.
    n : int
        Matrix order.
    nrhs : int
        Right-hand-side columns (``n`` for the inverses, 0 for ``potrf``).
    kc : int
        Columns per ``potrs`` call (:func:`rhs_chunk`).
    dtype : str
        float32, float64, complex64, complex128.
    upper : bool
        Fill mode of A / the factor.
    arr_a, arr_b : str
        ``"row_major"`` / ``"col_major"``: memory order of A (and L) and of B / X.
    batches_per_block : int
    block : tuple of int
        Thread block (x, y, z).
    sm : tuple of int
        Compute capability (major, minor).
    conj : bool
        ``solve`` only, complex only: conjugate B on load and X on store (the row-major
        reading of a column-major complex factor, :func:`plan_call`).
    pad : int
        Extra elements per row / column in shared memory: leading dimensions ``n + pad``
        for A and ``kc + pad`` (row-major B) or ``n + pad`` (column-major B), against bank
        conflicts (a tuning knob; global memory is untouched).
    check : bool
        Compile the in-kernel check (the inverses;
        :func:`~cusolver_trace.backends.fused.cholesky_inverse_checked`). A kernel without
        it carries none of its code: compiled in but switched off at run time, it made the
        unchecked kernels 19-36 % slower on the H200 (100000 x 16, 1000 x 64), most likely
        through register pressure.
    """

    op: str
    n: int
    nrhs: int
    kc: int
    dtype: str
    upper: bool
    arr_a: str
    arr_b: str
    batches_per_block: int
    block: tuple
    sm: tuple
    conj: bool = False
    pad: int = 0
    check: bool = False

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"op must be one of {OPS}, got {self.op!r}")
        if self.dtype not in _DTYPES:
            raise ValueError(f"unsupported dtype {self.dtype!r}")
        for a in (self.arr_a, self.arr_b):
            if a not in ("row_major", "col_major"):
                raise ValueError(f"arrangement must be row_major or col_major, got {a!r}")
        if self.n < 1 or self.batches_per_block < 1:
            raise ValueError("n and batches_per_block must be >= 1")
        if self.batches_per_block > math.prod(self.block):  # one thread writes each info
            raise ValueError(f"batches_per_block {self.batches_per_block} exceeds the "
                             f"{math.prod(self.block)} threads of a block")
        if self.op == "potrf" and (self.nrhs or self.kc):
            raise ValueError("potrf has no right-hand side")
        if self.op != "potrf" and not 1 <= self.kc <= self.nrhs:
            raise ValueError(f"need 1 <= kc <= nrhs, got kc={self.kc} nrhs={self.nrhs}")
        if self.conj and (self.op != "solve" or not _DTYPES[self.dtype][1]):
            raise ValueError("conj applies to complex solve kernels only")
        if not 0 <= self.pad <= 8:
            raise ValueError(f"pad must be 0..8, got {self.pad}")
        if self.check and self.op not in ("inverse", "potrf_inverse"):
            raise ValueError("the in-kernel check is for the inverses (inverse, potrf_inverse)")

    @property
    def threads(self) -> int:
        return math.prod(self.block)

    @property
    def chunks(self) -> int:
        return -(-self.nrhs // self.kc) if self.kc else 0

    @property
    def lda(self) -> int:
        return self.n + self.pad

    @property
    def ldb(self) -> int:
        return (self.kc if self.arr_b == "row_major" else self.n) + self.pad

    @property
    def shared_bytes(self) -> int:
        return shared_bytes(self.op, self.n, self.kc, self.dtype, self.batches_per_block,
                            self.pad, self.arr_b)

    @property
    def kernel_name(self) -> str:
        return "fused_" + self.op


LAYOUTS = ("row_major", "native")
#: How column-major inputs are read by default (:func:`plan_call`).
LAYOUT = "row_major"


def plan_call(op: str, dtype: str, upper: bool, in_a: str, in_b: str | None = None,
              layout: str | None = None) -> dict:
    """How one call's buffers are handed to cuSOLVERDx: the kernel's fill mode and
    arrangements, whether B / X are conjugated, and the memory order of the result.

    Parameters
    ----------
    op : str
        One of :data:`OPS`.
    dtype : str
    upper : bool
        The caller's fill mode.
    in_a, in_b : str
        Memory order of A (or L) and of B (``solve``): ``"row_major"`` / ``"col_major"``.
    layout : {"row_major", "native"} or None
        None: :data:`LAYOUT`.

    Returns
    -------
    dict
        ``upper``, ``arr_a``, ``arr_b``, ``conj`` for :class:`FusedKey`, and ``out``: the
        memory order of the result tensor.

    Examples
    --------
    >>> plan_call("inverse", "float64", False, "col_major")      # L from linalg.cholesky
    {'upper': True, 'arr_a': 'row_major', 'arr_b': 'row_major', 'conj': False, 'out': 'col_major'}
    >>> plan_call("inverse", "float64", False, "col_major", layout="native")
    {'upper': False, 'arr_a': 'col_major', 'arr_b': 'col_major', 'conj': False, 'out': 'col_major'}
    >>> plan_call("solve", "complex64", True, "col_major", "row_major")["conj"]
    True
    """
    layout = LAYOUT if layout is None else layout
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    for a in (in_a, in_b):
        if a not in (None, "row_major", "col_major"):
            raise ValueError(f"memory order must be row_major or col_major, got {a!r}")
    flip = in_a == "col_major" and layout == "row_major"
    arr_a = "row_major" if flip else in_a
    if op == "solve":
        if in_b is None:
            raise ValueError("solve needs B's memory order")
        return {"upper": bool(upper) != flip, "arr_a": arr_a, "arr_b": in_b,
                "conj": flip and _DTYPES[dtype][1], "out": in_b}
    # potrf: arr_b unused (kept equal to arr_a); the inverses write X as they read A
    return {"upper": bool(upper) != flip, "arr_a": arr_a, "arr_b": arr_a, "conj": False,
            "out": in_a}
