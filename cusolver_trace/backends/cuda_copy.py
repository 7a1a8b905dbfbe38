"""Column-major working copies in one kernel launch: the CUDA backend's prologue.

Every cuSOLVER / cuBLAS call of the backend works on a column-major copy of its operands,
torch's layout: a contiguous ``(..., c, r)`` buffer whose ``.mT`` is the ``(..., r, c)``
matrix. torch builds those in C++ (``cloneBatchedColumnMajor``, ``at::zeros`` for info, an
identity by ``fill_`` + ``diagonal().fill_``); from Python each of those torch calls costs
3–14 µs of host time per call on the H200, which at n ≤ 256 is more than the GPU work (the
replay / torch gap of issue 14). Here the whole prologue of a routine is one launch:

* the copy of A (all of it, or only the ``uplo`` triangle with the other one zeroed:
  cuSOLVER's ``potrf`` documents that it leaves the other triangle untouched, so zeroing it
  before the call gives the same bits as torch's ``triu_`` / ``tril_`` after it);
* the copy of B, or an identity of A's shape;
* the int32 ``info`` vector zeroed.

Hand-written (not a torch op) because no torch op does all three in one launch; the kernel
only moves bits (no arithmetic on the values), so it is exact for every dtype, NaN payloads
included. One ``cuLaunchKernel`` through CuPy's driver binding with the arguments as one
struct, as :mod:`.fused` does.

:func:`plan` (the launch geometry and the argument values) and :func:`emulate` (the kernel's
index arithmetic, thread by thread) are pure and tested on the CPU, where :func:`run_on_host`
also stands in for the launch in the backend's tests; the kernel itself runs on the GPU only.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from ..raw import _load
from ._context import LaunchArgs, current_device, current_stream_ptr

#: Modes of one job: copy every entry, only the upper (row <= column) or lower (row >= column)
#: triangle with the other zeroed, or write an identity (no source).
ALL, UPPER, LOWER, IDENTITY = 0, 1, 2, 3
_JOB_FIELDS = ("src", "sb", "sr", "sc", "dst", "r", "c", "mode")
_ARG_FIELDS = tuple(f"{f}{k}" for k in (0, 1) for f in _JOB_FIELDS) + (
    "batch", "info", "one_lo", "one_hi", "shift")
_THREADS = 256
_MAX_BLOCKS = 65535

_SRC = ("struct Job { long long " + ", ".join(_JOB_FIELDS) + "; };\n"
        "struct CopyArgs { Job job[2]; long long batch, info, one_lo, one_hi, shift; };\n") + r"""
template<typename T> __device__ __forceinline__ T bits(long long lo, long long hi);
template<> __device__ __forceinline__ unsigned int bits(long long lo, long long hi)
{ return (unsigned int)lo; }
template<> __device__ __forceinline__ unsigned long long bits(long long lo, long long hi)
{ return (unsigned long long)lo; }
template<> __device__ __forceinline__ ulonglong2 bits(long long lo, long long hi)
{ return make_ulonglong2((unsigned long long)lo, (unsigned long long)hi); }

// blockIdx.y picks the job; a block holds blockDim.x >> shift columns of it, 2^shift threads
// per column walking its rows, so stores are coalesced along each column. Values are moved as
// raw bits (T is an unsigned type of the element's size): exact, NaN payloads kept.
template<typename T>
__device__ void copy_impl(const CopyArgs& a)
{
    const Job& J = a.job[blockIdx.y];
    const int shift = (int)a.shift;
    const long long tpc = 1LL << shift;
    const long long cpb = (long long)blockDim.x >> shift;
    const long long cols = a.batch * J.c;
    const long long lane = threadIdx.x & (tpc - 1);
    const T* src = (const T*)J.src;
    T* dst = (T*)J.dst;
    const T zero = bits<T>(0, 0);
    const T one = bits<T>(a.one_lo, a.one_hi);
    for (long long q = (long long)blockIdx.x * cpb + (threadIdx.x >> shift); q < cols;
         q += (long long)gridDim.x * cpb) {
        const long long b = q / J.c, j = q - b * J.c;
        const T* s = src + b * J.sb + j * J.sc;
        T* d = dst + q * J.r;
        for (long long i = lane; i < J.r; i += tpc) {
            T v;
            if (J.mode == 3) v = (i == j) ? one : zero;
            else if (J.mode == 0 || (J.mode == 1 ? i <= j : i >= j)) v = s[i * J.sr];
            else v = zero;
            d[i] = v;
        }
    }
    if (blockIdx.y == 0 && a.info) {
        int* info = (int*)a.info;
        for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < a.batch;
             k += (long long)gridDim.x * blockDim.x)
            info[k] = 0;
    }
}
extern "C" __global__ void copy4(CopyArgs a) { copy_impl<unsigned int>(a); }
extern "C" __global__ void copy8(CopyArgs a) { copy_impl<unsigned long long>(a); }
extern "C" __global__ void copy16(CopyArgs a) { copy_impl<ulonglong2>(a); }
"""

# the bits of 1 per element size and kind (little-endian: a complex element's real part is
# its low half)
_ONE_BITS = {
    (4, False): (0x3F800000, 0),
    (8, False): (0x3FF0000000000000, 0),
    (8, True): (0x3F800000, 0),
    (16, True): (0x3FF0000000000000, 0),
}
_FUNCS: dict = {}          # (device index, element size) -> CUfunction pointer
_MODULES: dict = {}        # device index -> CuPy RawModule (kept alive with its functions)
_ARGS = threading.local()  # this thread's argument struct and kernelParams array
_DRIVER = None


def supported(itemsize: int, is_complex: bool) -> bool:
    """Whether the kernel copies elements of this size and kind (float32, float64,
    complex64, complex128)."""
    return (itemsize, is_complex) in _ONE_BITS


def plan(batch: int, jobs, *, info: int = 0, itemsize: int = 8, is_complex: bool = False):
    """Launch geometry and argument values of one prologue launch (pure; CPU-testable).

    Parameters
    ----------
    batch : int
        Number of matrices (>= 1).
    jobs : sequence of 1 or 2 tuples ``(src, sb, sr, sc, dst, r, c, mode)``
        Addresses (int) and strides in elements; ``r``, ``c`` the rows and columns of each
        ``(r, c)`` source matrix (the destination is column-major, ``r`` its leading
        dimension); ``mode`` one of :data:`ALL`, :data:`UPPER`, :data:`LOWER`,
        :data:`IDENTITY`. Every job has the same ``r``.
    info : int
        Address of ``batch`` int32 to zero (0: none).
    itemsize : int
        Bytes per element: 4, 8 or 16.
    is_complex : bool

    Returns
    -------
    (grid, block, values)
        ``grid = (x, jobs, 1)``, ``block = (threads, 1, 1)`` and the struct's int64 values
        in the kernel's field order (an absent second job is all zeros).

    Raises
    ------
    ValueError
        No job or more than two, rows that differ between jobs, batch < 1, an empty matrix,
        an unknown mode or element size.

    Examples
    --------
    >>> grid, block, values = plan(1, [(4096, 0, 64, 1, 8192, 64, 64, LOWER)])
    >>> grid, block, values[:8]
    ((16, 1, 1), (256, 1, 1), (4096, 0, 64, 1, 8192, 64, 64, 2))
    """
    jobs = [tuple(int(v) for v in j) for j in jobs]
    if not 1 <= len(jobs) <= 2:
        raise ValueError(f"a prologue launch runs 1 or 2 jobs, got {len(jobs)}")
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    if not supported(itemsize, is_complex):
        raise ValueError(f"no copy kernel for {itemsize}-byte "
                         f"{'complex' if is_complex else 'real'} elements")
    rows = {j[5] for j in jobs}
    if len(rows) != 1:
        raise ValueError(f"every job of a launch has the same number of rows, got {sorted(rows)}")
    for j in jobs:
        if j[5] < 1 or j[6] < 1:
            raise ValueError(f"an empty matrix ({j[5]} x {j[6]}) needs no launch")
        if j[7] not in (ALL, UPPER, LOWER, IDENTITY):
            raise ValueError(f"unknown copy mode {j[7]}")
    return _pack(batch, jobs, int(info), _ONE_BITS[itemsize, is_complex])


@functools.lru_cache(maxsize=1024)
def _geometry(r: int, cols: int) -> tuple:
    """``(shift, blocks)``: log2 of the threads per column (the smallest power of two >= r,
    at most the block) and the blocks along x for ``cols`` columns (grid-stride beyond
    :data:`_MAX_BLOCKS`)."""
    t = 1
    while t < r and t < _THREADS:
        t <<= 1
    shift = t.bit_length() - 1
    return shift, max(1, min(_MAX_BLOCKS, -(-cols // (_THREADS >> shift))))


_NO_JOB = (0,) * len(_JOB_FIELDS)


def _pack(batch: int, jobs, info: int, one: tuple):
    """:func:`plan`'s result without its checks (the per-call path of :func:`column_major`)."""
    shift, gx = _geometry(jobs[0][5], batch * max(j[6] for j in jobs))
    second = jobs[1] if len(jobs) == 2 else _NO_JOB
    return (gx, len(jobs), 1), (_THREADS, 1, 1), (*jobs[0], *second, batch, info, *one, shift)


def emulate(values, grid, block, itemsize: int):
    """The kernel's index arithmetic in Python, thread by thread: the stores one launch makes.

    Returns a list of ``(address, source)``: ``source`` the address an element is copied
    from, or the bytes stored (a zero, the dtype's one, an int32 zero of ``info``). The CPU
    tests run it against torch's own copies, and :func:`run_on_host` carries it out on host
    memory (the backend's tests on CPU tensors).
    """
    f = {k: int(v) for k, v in zip(_ARG_FIELDS, values)}
    zero = bytes(itemsize)
    one = np.array([f["one_lo"], f["one_hi"]], dtype=np.int64).tobytes()[:itemsize]
    shift = f["shift"]
    tpc, cpb = 1 << shift, block[0] >> shift
    stores = []
    for y in range(grid[1]):
        J = {k: f[f"{k}{y}"] for k in _JOB_FIELDS}
        cols = f["batch"] * J["c"]
        for x in range(grid[0]):
            for t in range(block[0]):
                q, lane = x * cpb + (t >> shift), t & (tpc - 1)
                while q < cols:
                    b, j = divmod(q, J["c"])
                    s = J["src"] + (b * J["sb"] + j * J["sc"]) * itemsize
                    d = J["dst"] + q * J["r"] * itemsize
                    for i in range(lane, J["r"], tpc):
                        if J["mode"] == IDENTITY:
                            v = one if i == j else zero
                        elif J["mode"] == ALL or (i <= j if J["mode"] == UPPER else i >= j):
                            v = s + i * J["sr"] * itemsize
                        else:
                            v = zero
                        stores.append((d + i * itemsize, v))
                    q += grid[0] * cpb
        if y == 0 and f["info"]:
            for x in range(grid[0]):
                for t in range(block[0]):
                    k = x * block[0] + t
                    while k < f["batch"]:
                        stores.append((f["info"] + 4 * k, bytes(4)))
                        k += grid[0] * block[0]
    return stores


def run_on_host(values, grid, block, itemsize: int) -> None:
    """Carry out :func:`emulate`'s stores on host memory (addresses of CPU tensors)."""
    import ctypes

    for address, source in emulate(values, grid, block, itemsize):
        if isinstance(source, int):
            ctypes.memmove(address, source, itemsize)
        else:
            ctypes.memmove(address, source, len(source))


def _function(idx: int, itemsize: int) -> int:
    fn = _FUNCS.get((idx, itemsize))
    if fn is None:
        mod = _MODULES.get(idx)
        if mod is None:
            mod = _MODULES[idx] = _load.cupy().RawModule(code=_SRC)
        kernel = mod.get_function(f"copy{itemsize}")
        fn = _FUNCS[idx, itemsize] = getattr(kernel, "kernel", kernel).ptr
    return fn


def _new_arg_buffer() -> LaunchArgs:
    """This thread's argument struct (:class:`._context.LaunchArgs`), made on first use."""
    buf = _ARGS.buf = LaunchArgs(len(_ARG_FIELDS))
    return buf


def _arg_buffer():
    """This thread's ``(values, kernelParams address)`` (see :func:`_new_arg_buffer`), for a
    caller that writes the struct itself (the next :func:`column_major` rewrites it whole)."""
    buf = getattr(_ARGS, "buf", None) or _new_arg_buffer()
    buf.last = None
    return buf.values, buf.params_ptr


def _driver():
    global _DRIVER
    if _DRIVER is None:
        _DRIVER = _load.cupy_driver()
    return _DRIVER


def _plain(x) -> bool:
    """Whether the kernel can read ``x`` (..., r, c) where it lies: no conjugate / negative
    bit, and batch dimensions that merge into one stride."""
    if x.is_conj() or x.is_neg():
        return False
    if x.dim() <= 3:
        return True
    try:
        x.view(-1, *x.shape[-2:])
    except RuntimeError:
        return False
    return True


def _strides(x) -> tuple:
    """``(batch stride, row stride, column stride)`` in elements of a plain ``x``."""
    if x.dim() == 2:
        return (0, *x.stride())
    if x.dim() == 3:
        return x.stride()
    return x.view(-1, *x.shape[-2:]).stride()


class _Prepared:
    """One kind of call (shapes, strides, dtype, what to copy, device), decided once: the
    output shapes, the launch geometry and the struct with every field but the addresses."""

    __slots__ = ("idx", "wa_shape", "wa_stride", "wb_shape", "wb_stride", "batch", "grid", "block",
                 "template", "itemsize", "fn", "geometry")

    def __init__(self, a, b, keep, identity):
        r, c = a.shape[-2:]
        batch_shape = tuple(a.shape[:-2])
        self.idx = a.get_device()
        self.itemsize = a.element_size()
        self.wa_shape, self.wa_stride = column_major_layout(batch_shape, r, c)
        self.wb_shape = self.wb_stride = None
        k = c
        if identity:
            if r != c:
                raise ValueError(f"an identity of a's shape needs square matrices, got {r} x {c}")
            self.wb_shape, self.wb_stride = self.wa_shape, self.wa_stride
        elif b is not None:
            if b.shape[-2] != r or tuple(b.shape[:-2]) != batch_shape:
                raise ValueError(f"b {tuple(b.shape)} does not match a {tuple(a.shape)}: same "
                                 "batch shape and rows needed")
            if b.dtype != a.dtype or b.device != a.device:
                raise ValueError("b must have a's dtype and device")
            k = b.shape[-1]
            if c == 0 and k > 0 and r > 0:
                # the launch copies b as the second job of a's: a without columns would leave
                # it unwritten (no backend routine asks for this: their a is square)
                raise ValueError(f"a {tuple(a.shape)} has no columns but b {tuple(b.shape)} "
                                 "has entries")
            self.wb_shape, self.wb_stride = column_major_layout(batch_shape, r, k)
        self.batch = 1
        for d in batch_shape:
            self.batch *= d
        self.grid = self.block = self.template = self.fn = self.geometry = None
        if self.batch == 0 or r == 0 or c == 0:
            return   # nothing to copy: no launch
        mode = ALL if keep is None else (UPPER if keep == "upper" else LOWER)
        jobs = [(0, *_strides(a), 0, r, c, mode)]
        if identity:
            jobs.append((0, 0, 0, 0, 0, r, c, IDENTITY))
        elif b is not None and k > 0:
            jobs.append((0, *_strides(b), 0, r, k, ALL))
        self.grid, self.block, values = _pack(self.batch, jobs, 0, _ONE_BITS[
            self.itemsize, a.is_complex()])
        self.template = np.array(values, dtype=np.int64)
        # cuLaunchKernel's geometry arguments after the function: (gx, gy, gz, bx, by, bz, smem)
        self.geometry = (self.grid[0], self.grid[1], 1, self.block[0], 1, 1, 0)


@functools.lru_cache(maxsize=256)
def column_major_layout(batch_shape: tuple, r: int, c: int) -> tuple:
    """``(shape, strides)`` of a batch of ``(r, c)`` matrices, each column-major, stored one
    after another (torch's layout for cuSOLVER: the ``.mT`` of a contiguous ``(..., c, r)``).

    Examples
    --------
    >>> column_major_layout((2, 3), 4, 5)
    ((2, 3, 4, 5), (60, 20, 1, 4))
    """
    strides, step = [], r * c
    for d in reversed(batch_shape):
        strides.append(step)
        step *= d
    return (*batch_shape, r, c), (*reversed(strides), 1, r)


_CALLS: dict = {}   # the key of a kind of call -> _Prepared
# where the addresses go in the struct (see _ARG_FIELDS)
_SRC0, _DST0, _SRC1, _DST1, _INFO = (_ARG_FIELDS.index(f) for f in ("src0", "dst0", "src1",
                                                                    "dst1", "info"))


def column_major(a, b=None, *, keep: str | None = None, identity: bool = False,
                 info: bool = False):
    """Column-major working copies of ``a`` and ``b`` (or an identity) and a zeroed ``info``,
    in one kernel launch on torch's current stream of ``a``'s device.

    Parameters
    ----------
    a : torch.Tensor (..., r, c), CUDA, float32 / float64 / complex64 / complex128
        Any strides; conjugate / negative views are resolved first.
    b : torch.Tensor (..., r, k), optional
        Same device, dtype and batch shape as ``a``.
    keep : {None, "upper", "lower"}
        Copy only this triangle of ``a``, the other zeroed (``None``: all of it).
    identity : bool
        Instead of ``b``: identity matrices of ``a``'s shape (square ``a``).
    info : bool
        Also return ``batch`` int32 zeros.

    Returns
    -------
    (wa, wb, info)
        ``wa`` ``(..., r, c)`` equal to ``a`` (its ``keep`` triangle), each matrix
        column-major (strides ``(..., 1, r)``), the matrices one after another: what
        cuSOLVER reads with ``lda = r`` at ``data_ptr() + i * r * c`` elements; ``wb``
        ``(..., r, k)`` the same for ``b`` (or the identity), else None; ``info`` int32
        ``(batch,)`` zeros, else None.

    Raises
    ------
    ValueError
        Both ``b`` and ``identity``, an unknown ``keep``, a ``b`` unlike ``a`` (batch shape,
        rows, dtype, device), an identity of non-square matrices.

    Notes
    -----
    Each kind of call (shapes, strides, dtype, device, what is copied) is prepared once;
    after that a call is the allocations, the addresses written into the argument struct
    and the launch.
    """
    key = (a.shape, a.stride(), a.dtype, a.get_device(), keep, identity,
           None if b is None else (b.shape, b.stride(), b.dtype, b.device))
    prep = _CALLS.get(key)
    if prep is None or a.is_conj() or a.is_neg() or (b is not None and (b.is_conj() or b.is_neg())):
        return _first_of_kind(a, b, key, prep, keep, identity, info)
    # the hot path (issue 14: at n = 64 this prologue was a third of a replay's host time),
    # kept to what changes per call: Tensor.new_empty_strided (a's dtype and device without
    # parsing them again, the column-major layout without a transposed view), the addresses
    # written into this thread's argument struct, and the launch
    wa = a.new_empty_strided(prep.wa_shape, prep.wa_stride)
    wb = None if prep.wb_shape is None else a.new_empty_strided(prep.wb_shape, prep.wb_stride)
    inf = a.new_empty(prep.batch, dtype=_INT32 or _int32()) if info else None
    if prep.grid is None:   # empty
        if inf is not None:
            inf.zero_()
        return wa, wb, inf
    buf = getattr(_ARGS, "buf", None) or _new_arg_buffer()
    values = buf.values
    if buf.last is not prep:   # the constant fields, written when the kind of call changes
        values[:] = prep.template
        buf.last = prep
    # the addresses, every one this kind of call uses (the same set on every call of it;
    # info is not part of the kind, so its field is written either way: 0 = none)
    values[_SRC0] = a.data_ptr()
    values[_DST0] = wa.data_ptr()
    if wb is not None:
        values[_DST1] = wb.data_ptr()
        if b is not None:
            values[_SRC1] = b.data_ptr()
    values[_INFO] = 0 if inf is None else inf.data_ptr()
    _launch(prep, values, buf.params_ptr)
    return wa, wb, inf


def _first_of_kind(a, b, key, prep, keep, identity, info):
    """:func:`column_major` for a kind of call not prepared yet (validated and prepared here),
    or with a conjugate / negative bit the kernel does not apply (resolved first)."""
    if prep is None:
        if b is not None and identity:
            raise ValueError("pass b or identity=True, not both")
        if keep not in (None, "upper", "lower"):
            raise ValueError(f"keep must be None, 'upper' or 'lower', got {keep!r}")
        if not _plain(a) or (b is not None and not _plain(b)):
            # resolved conjugate / negative bits or unmergeable batch dimensions: a copy the
            # kernel can read (rare); each distinct input would otherwise fill the memo
            if not _plain(a):
                a = a.resolve_conj().resolve_neg().contiguous()
            if b is not None and not _plain(b):
                b = b.resolve_conj().resolve_neg().contiguous()
            return column_major(a, b, keep=keep, identity=identity, info=info)
        _CALLS[key] = _Prepared(a, b, keep, identity)
        return column_major(a, b, keep=keep, identity=identity, info=info)
    # same shape and strides as a prepared call, but a bit the kernel does not apply
    return column_major(a.resolve_conj().resolve_neg(),
                        None if b is None else b.resolve_conj().resolve_neg(),
                        keep=keep, identity=identity, info=info)


_INT32 = None   # torch.int32, once torch is imported (this module imports torch lazily)


def _int32():
    global _INT32
    import torch

    _INT32 = torch.int32
    return _INT32


def _launch(prep: _Prepared, values, params: int) -> None:
    """One ``cuLaunchKernel`` of ``prep``'s kernel on torch's current stream of its device,
    with the struct already in this thread's argument buffer (``values``; ``params`` is the
    address of the one-entry ``void*`` array pointing at it). The CPU tests replace this
    function by one calling :func:`run_on_host`."""
    idx = prep.idx
    if idx == current_device():
        fn = prep.fn or _bind_function(prep)
        (_DRIVER or _driver()).launchKernel(fn, *prep.geometry, current_stream_ptr(idx), params, 0)
        return
    import torch

    # the module is loaded on, and the launch made from, the tensor's device: CuPy loads a
    # module on the current device, so the function is looked up inside the switch too
    with torch.cuda.device(idx):
        fn = prep.fn or _bind_function(prep)
        (_DRIVER or _driver()).launchKernel(fn, *prep.geometry, current_stream_ptr(idx), params, 0)


def _bind_function(prep: _Prepared) -> int:
    """``prep``'s kernel (its device ``prep.idx`` must be current), kept on ``prep``."""
    prep.fn = _function(prep.idx, prep.itemsize)
    return prep.fn

