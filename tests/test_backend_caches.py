"""The CUDA backend's per-call caches, as pure functions and classes (no GPU needed):
stream binding, bufferSize keys, the grow-only workspace, per-device contexts, pointer
arithmetic, working copies and the check kernel's grid."""
from __future__ import annotations

import pytest
import torch

from cusolver_trace.backends import _context as ctxmod
from cusolver_trace.backends import cuda
from cusolver_trace.raw import cublas as cb


def test_stream_binding_sets_the_stream_only_when_it_changes():
    calls = []
    b = ctxmod.StreamBinding(lambda p: calls.append(("solver", p)),
                             lambda p: calls.append(("blas", p)))
    assert b.stream is None
    assert b.bind(0) is True          # the legacy default stream is a stream too (pointer 0)
    assert b.bind(0) is False
    assert b.bind(0xABC) is True
    assert b.bind(0xABC) is False
    assert b.bind(0) is True          # back to the first one: bound again
    assert calls == [("solver", 0), ("blas", 0), ("solver", 0xABC), ("blas", 0xABC),
                     ("solver", 0), ("blas", 0)]
    assert b.stream == 0


def test_stream_binding_keeps_the_old_stream_when_a_setter_fails():
    def fail(p):
        raise RuntimeError("cusolverDnSetStream failed")

    b = ctxmod.StreamBinding(fail)
    with pytest.raises(RuntimeError):
        b.bind(5)
    assert b.stream is None  # the next call tries again


@pytest.mark.parametrize("other", [
    ("potrf", 1, 0, 64, 64),            # another routine
    ("Xpotrf", 0, 0, 64, 64),           # another dtype
    ("Xpotrf", 1, 1, 64, 64),           # another uplo
    ("Xpotrf", 1, 0, 65, 65),           # another n
    ("Xpotrf", 1, 0, 64, 128),          # another lda
    ("Xpotrf", 1, 0, 64, 64, 1),        # an extra argument (trtri's diag)
])
def test_buffer_sizes_are_asked_once_per_key(other):
    cache, asked = ctxmod.SizeCache(), []

    def ask(val):
        return lambda: asked.append(val) or val

    base = ctxmod.size_key("Xpotrf", 1, 0, 64, 64)
    assert cache.get_or(base, ask((8, 0))) == (8, 0)
    assert cache.get_or(base, ask((9, 9))) == (8, 0)   # cached: the library is not asked
    assert cache.get_or(ctxmod.size_key(*other), ask((16, 0))) == (16, 0)
    assert asked == [(8, 0), (16, 0)]
    assert ctxmod.size_key(*other) != base


def test_size_key_normalizes_numbers():
    import numpy as np

    assert ctxmod.size_key("potri", "d", np.int64(1), np.int32(7), 7) == ("potri", "d", 1, 7, 7)
    assert ctxmod.size_key("potri", "d", True, 7, 7) == ctxmod.size_key("potri", "d", 1, 7, 7)


def test_scratch_is_reused_grown_and_replaced_on_a_stream_change():
    made = []

    def alloc(nbytes):
        assert s.buf is None, "the old buffer is dropped before the new one is allocated"
        buf = bytearray(nbytes)
        made.append(nbytes)
        return buf

    s = ctxmod.Scratch(alloc)
    a = s.get(100, stream=1)
    assert s.get(100, stream=1) is a and s.get(10, stream=1) is a   # big enough: reused
    b = s.get(200, stream=1)                                        # too small: grown
    assert b is not a and len(b) == 200
    c = s.get(50, stream=2)                                         # another stream: new buffer
    assert c is not b and len(c) == 50 and s.stream == 2
    assert s.get(0, stream=2) is c                                  # 0 bytes: at least 1
    s.clear()
    assert s.get(1, stream=2) is not c
    assert made == [100, 200, 50, 1]


def test_scratch_never_hands_out_zero_bytes():
    s = ctxmod.Scratch(bytearray)
    assert len(s.get(0, stream=0)) == 1


def test_contexts_are_per_device():
    ctxs, made = {}, []

    def make(i):
        made.append(i)
        return object()

    a0 = ctxmod.context_for(ctxs, 0, make)
    a1 = ctxmod.context_for(ctxs, 1, make)
    assert a0 is not a1
    assert ctxmod.context_for(ctxs, 0, make) is a0 and ctxmod.context_for(ctxs, 1, make) is a1
    assert made == [0, 1]


def test_stream_ref_is_what_cupy_reads():
    assert ctxmod.StreamRef(1234).ptr == 1234


def test_pointer_arrays_are_exact_for_real_addresses():
    p0, step, batch = 0x7F12_3456_7800, 32 * 32 * 8, 1000
    got = cuda._pointers(p0, step, batch, "cpu")
    assert got.dtype == torch.int64 and got.shape == (batch,)
    assert got.tolist() == [p0 + b * step for b in range(batch)]
    assert cuda._pointers(p0, step, 1, "cpu").tolist() == [p0]


def test_pointer_array_of_a_tensor():
    w = torch.zeros(5, 3, 4, dtype=torch.complex128)
    assert ctxmod.pointer_array(w).tolist() == [w[b].data_ptr() for b in range(5)]


@pytest.mark.parametrize("view", ["plain", "conj", "neg", "expanded", "transposed", "batched"])
def test_work_copy_is_a_new_column_major_copy(view):
    g = torch.Generator().manual_seed(0)
    base = torch.randn(4, 3, dtype=torch.complex128, generator=g)
    x = {"plain": base, "conj": base.conj(), "neg": base.conj().imag,
         "expanded": base.expand(2, 4, 3), "transposed": base.mT,
         "batched": torch.randn(2, 3, 4, 3, dtype=torch.float64, generator=g)}[view]
    before = x.clone()
    w = cuda.work_copy(x)
    assert w.is_contiguous() and not w.is_conj() and not w.is_neg()
    assert w.shape == (*x.shape[:-2], x.shape[-1], x.shape[-2])
    assert torch.equal(w.mT, x.resolve_conj().resolve_neg())
    w.zero_()  # writing the copy never writes the input
    assert torch.equal(x, before)
    c = cuda.colmajor(x)
    assert c.dim() == 3 and c.is_contiguous()
    assert torch.equal(cuda.matrices(c, x.shape[:-2]), x.resolve_conj().resolve_neg())


def test_trsm_operations_are_cached_per_dtype_kind_and_uplo():
    assert cuda._trsm_ops(False, False) == (cb.OP_N, cb.OP_T)
    assert cuda._trsm_ops(False, True) == (cb.OP_T, cb.OP_N)
    assert cuda._trsm_ops(True, False) == (cb.OP_N, cb.OP_C)
    assert cuda._trsm_ops(True, True) == (cb.OP_C, cb.OP_N)
    assert cuda._trsm_ops(True, True) is cuda._trsm_ops(True, True)


def test_host_scalar_one_is_stable():
    import numpy as np

    for t, dtype in (("s", np.float32), ("d", np.float64), ("c", np.complex64),
                     ("z", np.complex128)):
        p = cuda._one(t)
        assert cuda._one(t) == p
        arr, ptr = cuda._ONE[t]
        assert ptr == p == arr.ctypes.data and arr.dtype == dtype and arr[0] == 1


def test_dtype_facts_cached_per_torch_dtype():
    d = cuda._dtype(torch.complex64)
    assert cuda._dtype(torch.complex64) is d
    assert (d.prefix, d.cuda_data_type, d.itemsize) == ("c", 4, 8)


@pytest.mark.parametrize("batch,n,grid", [(1, 1, (1, 1)), (1000, 32, (1000, 1)),
                                          (8, 64, (8, 1)), (8, 65, (8, 2)),
                                          (8, 512, (8, 64)), (1, 4096, (1, 4096)),
                                          (1, 65536, (1, 65535))])
def test_check_kernel_grid(batch, n, grid):
    assert cuda.status_grid(batch, n) == grid
