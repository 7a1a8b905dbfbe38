"""The CUDA backend's prologue kernel (:mod:`cusolver_trace.backends.cuda_copy`).

CPU: its launch plan and, through :func:`~cusolver_trace.backends.cuda_copy.emulate`, its
index arithmetic thread by thread, against what torch's ``x.mT.clone()`` /
``triu`` / ``tril`` / ``eye`` give, for strided, transposed, expanded and batched sources.
GPU (marked ``gpu``): the kernel itself, bit for bit, on the same classes of views.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from cusolver_trace.backends import cuda_copy as cc

MODES = {cc.ALL: None, cc.UPPER: "upper", cc.LOWER: "lower"}


def _expected(x: torch.Tensor, mode: int) -> torch.Tensor:
    """What a job writes: the column-major copy (``(..., c, r)``) of x's kept entries."""
    if mode == cc.UPPER:
        x = x.triu()
    elif mode == cc.LOWER:
        x = x.tril()
    return x.mT.contiguous()


@st.composite
def sources(draw):
    """A float64 source (batch, r, c) as a strided view of a flat buffer: transposed,
    sliced with steps, expanded (stride 0) or plain; returns (buffer, view, offset)."""
    batch = draw(st.integers(1, 3))
    r = draw(st.integers(1, 9))
    c = draw(st.integers(1, 9))
    kind = draw(st.sampled_from(["plain", "transposed", "stepped", "expanded", "offset"]))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    if kind == "plain":
        base = torch.randn(batch, r, c, dtype=torch.float64, generator=g)
        view = base
    elif kind == "transposed":
        base = torch.randn(batch, c, r, dtype=torch.float64, generator=g)
        view = base.mT
    elif kind == "stepped":
        base = torch.randn(batch, 2 * r, 3 * c, dtype=torch.float64, generator=g)
        view = base[:, ::2, ::3]
    elif kind == "expanded":
        base = torch.randn(1, r, c, dtype=torch.float64, generator=g)
        view = base.expand(batch, r, c)
    else:
        base = torch.randn(batch * r * c + 5, dtype=torch.float64, generator=g)
        view = base[5:].view(batch, r, c)
    return base, view


def _job(view, dst, mode):
    """The job copying ``view`` (batch, r, c) into the CPU tensor ``dst`` (real addresses)."""
    sb, sr, sc = view.stride()
    r, c = view.shape[-2:]
    return (view.data_ptr(), sb, sr, sc, dst.data_ptr(), r, c, mode)


def _host_launch(batch, jobs, itemsize=8, info=0, is_complex=False):
    grid, block, values = cc.plan(batch, jobs, info=info, itemsize=itemsize, is_complex=is_complex)
    cc.run_on_host(values, grid, block, itemsize)


@settings(max_examples=60, deadline=None)
@given(sources(), st.sampled_from([cc.ALL, cc.UPPER, cc.LOWER]))
def test_emulated_copy_matches_torch(src, mode):
    base, view = src
    before = base.clone()
    batch, r, c = view.shape
    dst = torch.full((batch, c, r), float("nan"), dtype=torch.float64)
    _host_launch(batch, [_job(view, dst, mode)])
    assert torch.equal(dst, _expected(view, mode))
    assert torch.equal(base, before)  # the source is only read


@settings(max_examples=40, deadline=None)
@given(sources(), st.integers(1, 5), st.booleans())
def test_emulated_second_job_and_info(src, k, identity):
    _, view = src
    batch, r, c = view.shape
    dst0 = torch.full((batch, c, r), float("nan"), dtype=torch.float64)
    info = torch.full((batch,), 7, dtype=torch.int32)
    jobs = [_job(view, dst0, cc.ALL)]
    if identity:
        dst1 = torch.full((batch, r, r), float("nan"), dtype=torch.float64)
        jobs.append((0, 0, 0, 0, dst1.data_ptr(), r, r, cc.IDENTITY))
        want1 = torch.eye(r, dtype=torch.float64).expand(batch, r, r)
    else:
        B = torch.randn(batch, r, k, dtype=torch.float64)
        dst1 = torch.full((batch, k, r), float("nan"), dtype=torch.float64)
        jobs.append(_job(B, dst1, cc.ALL))
        want1 = B.mT
    _host_launch(batch, jobs, info=info.data_ptr())
    assert torch.equal(dst0, view.mT)
    assert torch.equal(dst1, want1)
    assert (info == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64,
                                   torch.complex128], ids=str)
def test_emulated_copy_moves_bits_of_every_dtype(dtype):
    x = torch.randn(2, 5, 3, dtype=dtype)
    isz = x.element_size()
    dst = torch.empty(2, 3, 5, dtype=dtype)
    eye = torch.empty(2, 5, 5, dtype=dtype)
    sq = torch.randn(2, 5, 5, dtype=dtype)
    dsq = torch.empty(2, 5, 5, dtype=dtype)
    _host_launch(2, [_job(x, dst, cc.ALL)], itemsize=isz, is_complex=dtype.is_complex)
    assert torch.equal(dst.mT, x)
    _host_launch(2, [_job(sq, dsq, cc.UPPER), (0, 0, 0, 0, eye.data_ptr(), 5, 5, cc.IDENTITY)],
                 itemsize=isz, is_complex=dtype.is_complex)
    assert torch.equal(dsq.mT, sq.triu())
    assert torch.equal(eye, torch.eye(5, dtype=dtype).expand(2, 5, 5))


def test_plan_geometry_covers_every_column_and_strides_beyond_the_grid():
    # 64 rows: 64 threads per column, 4 columns per block
    grid, block, values = cc.plan(1, [(0, 0, 64, 1, 0, 64, 64, cc.ALL)])
    assert grid == (16, 1, 1) and block == (256, 1, 1) and values[-1] == 6
    # 8 rows: 8 threads per column, 32 columns per block; a batch of 100000 → 25000 blocks
    grid, _, values = cc.plan(100000, [(0, 0, 8, 1, 0, 8, 8, cc.ALL)])
    assert grid[0] == 25000 and values[-1] == 3
    # more columns than the grid holds: capped, the kernel's loop strides over the rest
    grid, _, values = cc.plan(10**6, [(0, 0, 300, 1, 0, 300, 300, cc.ALL)])
    assert grid[0] == 65535 and values[-1] == 8
    # the second job's columns count too
    grid, _, _ = cc.plan(1, [(0, 0, 4, 1, 0, 4, 4, cc.ALL), (0, 0, 0, 0, 0, 4, 100, cc.ALL)])
    assert grid[:2] == (2, 2)


def test_emulated_grid_stride_when_columns_exceed_the_grid(monkeypatch):
    monkeypatch.setattr(cc, "_MAX_BLOCKS", 2)
    monkeypatch.setattr(cc, "_THREADS", 4)   # one column per block, 10 columns, 2 blocks
    cc._geometry.cache_clear()
    try:
        x = torch.arange(5 * 3 * 2, dtype=torch.float64).view(5, 3, 2)
        assert cc.plan(5, [(0, 0, 1, 1, 0, 3, 2, 0)])[0][0] == 2
        dst = torch.full((5, 2, 3), float("nan"), dtype=torch.float64)
        _host_launch(5, [_job(x, dst, cc.LOWER)])
        assert torch.equal(dst, _expected(x, cc.LOWER))
    finally:
        cc._geometry.cache_clear()


@pytest.mark.parametrize("itemsize, cplx, one", [(4, False, np.float32(1)), (8, False, np.float64(1)),
                                                 (8, True, np.complex64(1)),
                                                 (16, True, np.complex128(1))])
def test_identity_bits_are_the_dtype_one(itemsize, cplx, one):
    _, _, values = cc.plan(1, [(0, 0, 0, 0, 0, 2, 2, cc.IDENTITY)], itemsize=itemsize,
                           is_complex=cplx)
    lo, hi = values[-3], values[-2]
    raw = np.array([lo, hi], dtype=np.uint64).tobytes()[:itemsize]
    assert np.frombuffer(raw, dtype=one.dtype)[0] == one


@pytest.mark.parametrize("batch, jobs, kw, match", [
    (1, [], {}, "1 or 2 jobs"),
    (1, [(0, 0, 1, 1, 0, 2, 2, 0)] * 3, {}, "1 or 2 jobs"),
    (0, [(0, 0, 1, 1, 0, 2, 2, 0)], {}, "batch"),
    (1, [(0, 0, 1, 1, 0, 2, 2, 0), (0, 0, 1, 1, 0, 3, 2, 0)], {}, "same number of rows"),
    (1, [(0, 0, 1, 1, 0, 0, 2, 0)], {}, "empty"),
    (1, [(0, 0, 1, 1, 0, 2, 2, 9)], {}, "mode"),
    (1, [(0, 0, 1, 1, 0, 2, 2, 0)], {"itemsize": 2}, "no copy kernel"),
    (1, [(0, 0, 1, 1, 0, 2, 2, 0)], {"itemsize": 16, "is_complex": False}, "no copy kernel"),
])
def test_plan_rejects(batch, jobs, kw, match):
    with pytest.raises(ValueError, match=match):
        cc.plan(batch, jobs, **kw)


def _host_run(prep, values, params):
    """The launch of column_major carried out on host memory; the kernelParams array it
    passes must point at the struct it filled."""
    assert ctypes.c_void_p.from_address(params).value == values.ctypes.data
    cc.run_on_host(values, prep.grid, prep.block, prep.itemsize)


@pytest.fixture
def host(monkeypatch):
    """column_major on CPU tensors: the launch carried out by the kernel's emulation."""
    monkeypatch.setattr(cc, "current_device", lambda: -1)
    monkeypatch.setattr(cc, "_launch", _host_run)
    monkeypatch.setattr(cc, "_CALLS", {})


def test_column_major_argument_errors(host):
    x = torch.zeros(2, 2)
    with pytest.raises(ValueError, match="not both"):
        cc.column_major(x, x, identity=True)
    with pytest.raises(ValueError, match="keep"):
        cc.column_major(x, keep="both")
    with pytest.raises(ValueError, match="does not match"):
        cc.column_major(torch.zeros(2, 3, 3), torch.zeros(3, 3, 1))
    with pytest.raises(ValueError, match="dtype and device"):
        cc.column_major(x, torch.zeros(2, 1, dtype=torch.float64))
    with pytest.raises(ValueError, match="square"):
        cc.column_major(torch.zeros(2, 3), identity=True)
    with pytest.raises(ValueError, match="no columns"):
        cc.column_major(torch.zeros(2, 3, 0), torch.zeros(2, 3, 2))


def test_column_major_checks_b_again_when_only_its_device_differs(host, monkeypatch):
    """The memo key holds b's device: a b like a prepared one but elsewhere is checked again."""
    a, b = torch.zeros(3, 3), torch.zeros(3, 2)
    cc.column_major(a, b)
    other = torch.zeros(3, 2, device="meta")
    with pytest.raises(ValueError, match="dtype and device"):
        cc.column_major(a, other)


def test_column_major_prepares_each_kind_of_call_once(host):
    x = torch.randn(3, 5, 5, dtype=torch.float64)
    wa, _, info = cc.column_major(x, keep="upper", info=True)
    assert torch.equal(wa, x.triu()) and info.tolist() == [0, 0, 0] and len(cc._CALLS) == 1
    y = torch.randn(3, 5, 5, dtype=torch.float64)
    wa, _, _ = cc.column_major(y, keep="upper", info=True)
    assert torch.equal(wa, y.triu()) and len(cc._CALLS) == 1   # same kind: reused
    cc.column_major(y.mT, keep="upper")                          # other strides: another kind
    cc.column_major(y, keep="lower")
    assert len(cc._CALLS) == 3


def test_column_major_conjugate_and_negative_views_never_reuse_a_plain_call(host):
    g = torch.Generator().manual_seed(1)
    z = torch.randn(4, 4, dtype=torch.complex128, generator=g)
    for view in (z, z.conj(), z, z.conj().imag, -z, z.conj()):
        before, bits = view.clone(), (view.is_conj(), view.is_neg())
        wa, eye, _ = cc.column_major(view, identity=True)
        assert torch.equal(wa, view.resolve_conj().resolve_neg())
        assert torch.equal(eye, torch.eye(4, dtype=view.dtype))
        assert torch.equal(view, before) and (view.is_conj(), view.is_neg()) == bits


def test_column_major_batch_dims_that_do_not_merge_and_expanded(host):
    g = torch.Generator().manual_seed(2)
    base = torch.randn(3, 4, 5, 6, dtype=torch.float32, generator=g)
    for x in (base.permute(1, 0, 2, 3), base[:, ::2], base[:1, :1].expand(3, 4, 5, 6), base):
        b = torch.randn(*x.shape[:-1], 2, dtype=torch.float32, generator=g)
        wa, wb, info = cc.column_major(x, b, info=True)
        assert wa.shape == x.shape and wa.mT.is_contiguous() and torch.equal(wa, x)
        assert wb.shape == b.shape and wb.mT.is_contiguous() and torch.equal(wb, b)
        assert info.shape == (x.shape[0] * x.shape[1],) and (info == 0).all()


def test_column_major_empty_shapes_need_no_launch(host, monkeypatch):
    monkeypatch.setattr(cc, "_launch", lambda *a: pytest.fail("launched for an empty input"))
    for shape, batch in [((0, 3, 3), 0), ((3, 0, 0), 3), ((2, 3, 0), 2)]:
        wa, _, info = cc.column_major(torch.empty(shape), info=True)
        assert wa.shape == shape
        assert info.shape == (batch,) and (info == 0).all()



_KINDS = [dict(keep="upper"), dict(keep="lower"), dict(keep=None), dict(identity=True),
          dict(rhs=2), dict(rhs=1, keep="lower")]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(_KINDS) - 1), st.booleans(), st.integers(0, 2**31)),
                min_size=1, max_size=8))
def test_column_major_any_sequence_of_kinds_with_and_without_info(calls):
    """The hot path writes a kind's constant fields only when the thread's struct last held
    another kind: in any sequence of kinds, with info asked or not on calls of the same kind,
    every call copies exactly its own input, the struct holds that kind's template plus the
    call's addresses (info 0 when not asked: never the previous call's freed vector), and the
    input is unchanged."""
    import contextlib

    with contextlib.ExitStack() as stack:
        mp = stack.enter_context(pytest.MonkeyPatch.context())
        mp.setattr(cc, "current_device", lambda: -1)
        mp.setattr(cc, "_launch", _host_run)
        mp.setattr(cc, "_CALLS", {})
        for k, with_info, seed in calls:
            kind = dict(_KINDS[k])
            g = torch.Generator().manual_seed(seed)
            x = torch.randn(2, 4, 4, dtype=torch.float64, generator=g)
            rhs = kind.pop("rhs", None)
            b = None if rhs is None else torch.randn(2, 4, rhs, dtype=torch.float64, generator=g)
            before = (x.clone(), None if b is None else b.clone())
            wa, wb, info = cc.column_major(x, b, info=with_info, **kind)
            keep = kind.get("keep")
            want = x if keep is None else (x.triu() if keep == "upper" else x.tril())
            assert torch.equal(wa, want) and wa.mT.is_contiguous()
            if kind.get("identity"):
                assert torch.equal(wb, torch.eye(4, dtype=x.dtype).expand(2, 4, 4))
            elif b is not None:
                assert torch.equal(wb, b)
            else:
                assert wb is None
            assert (info is not None) == with_info and (info is None or (info == 0).all())
            values = cc._ARGS.buf.values
            prep = cc._ARGS.buf.last
            assert prep is next(iter(v for v in cc._CALLS.values() if v is prep))
            addresses = {cc._SRC0: x.data_ptr(), cc._DST0: wa.data_ptr(),
                         cc._INFO: info.data_ptr() if with_info else 0}
            if wb is not None:
                addresses[cc._DST1] = wb.data_ptr()
                if b is not None:
                    addresses[cc._SRC1] = b.data_ptr()
            expect = prep.template.copy()
            for i, v in addresses.items():
                expect[i] = v
            assert values.tolist() == expect.tolist()
            assert torch.equal(x, before[0]) and (b is None or torch.equal(b, before[1]))
        # a caller that writes the struct itself makes the next call write it whole
        vals, _ = cc._arg_buffer()
        vals[:] = -1
        x = torch.randn(2, 4, 4, dtype=torch.float64)
        wa, _, _ = cc.column_major(x, keep="upper")
        assert torch.equal(wa, x.triu()) and -1 not in cc._ARGS.buf.values.tolist()


# --------------------------------------------------------------------------- GPU
DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]


def _views(dtype):
    g = torch.Generator(device="cuda").manual_seed(3)
    base = torch.randn(3, 7, 7, dtype=dtype, device="cuda", generator=g)
    big = torch.randn(2, 3, 14, 21, dtype=dtype, device="cuda", generator=g)
    out = {"plain": base, "transposed": base.mT, "stepped": big[:, 1, ::2, ::3],
           "expanded": base[0].expand(4, 7, 7), "4-d": big[..., :7, :7],
           "2-d": base[1], "offset": base[1:], "neg": -base}
    if dtype.is_complex:
        out["conj"] = base.conj()
        out["conj mT"] = base.mT.conj()
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("keep", [None, "upper", "lower"])
def test_gpu_column_major_matches_torch_bitwise(dtype, keep):
    for name, x in _views(dtype).items():
        before = x.clone()
        wa, wb, info = cc.column_major(x, keep=keep, info=True)
        want = x.resolve_conj().resolve_neg()
        if keep == "upper":
            want = want.triu()
        elif keep == "lower":
            want = want.tril()
        assert wa.mT.is_contiguous() and wa.shape == x.shape, name
        assert torch.equal(wa, want), name
        assert wb is None and info.dtype == torch.int32 and (info == 0).all(), name
        assert info.shape == (x.numel() // (x.shape[-1] * x.shape[-2]),), name
        assert torch.equal(x, before), name


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gpu_column_major_second_operand_and_identity(dtype):
    g = torch.Generator(device="cuda").manual_seed(5)
    for shape in [(6, 6), (1, 6, 6), (2, 3, 6, 6)]:
        a = torch.randn(shape, dtype=dtype, device="cuda", generator=g)
        b = torch.randn(*shape[:-1], 4, dtype=dtype, device="cuda", generator=g).mT.contiguous().mT
        wa, wb, info = cc.column_major(a, b, info=True)
        assert torch.equal(wa, a) and torch.equal(wb, b)
        assert wb.shape == (*shape[:-2], 6, 4) and wb.mT.is_contiguous()
        wa, eye, info = cc.column_major(a, identity=True)
        assert info is None and torch.equal(wa, a)
        assert torch.equal(eye, torch.eye(6, dtype=dtype, device="cuda").expand(shape))


@pytest.mark.gpu
def test_gpu_column_major_keeps_nan_payloads_and_signed_zeros():
    x = torch.tensor([0x7FF8DEADBEEF0001, -(2**63), 0x3FF0000000000000, 0x7FF0000000000000],
                     dtype=torch.int64, device="cuda").view(torch.float64).view(2, 2)
    wa, _, _ = cc.column_major(x)
    assert torch.equal(wa.contiguous().view(torch.int64), x.contiguous().view(torch.int64))


@pytest.mark.gpu
def test_gpu_column_major_large_and_empty():
    x = torch.randn(3000, 2500, dtype=torch.float64, device="cuda")
    wa, _, _ = cc.column_major(x, keep="lower")
    assert torch.equal(wa, x.tril())
    x = torch.randn(70000, 3, 3, dtype=torch.float32, device="cuda")  # > 65535 column groups
    wa, _, info = cc.column_major(x, info=True)
    assert torch.equal(wa, x) and (info == 0).all()
    for shape, batch in [((0, 3, 3), 0), ((3, 0, 0), 3), ((2, 3, 0), 2)]:
        e = torch.empty(shape, device="cuda")
        wa, _, info = cc.column_major(e, info=True)
        assert wa.shape == shape
        assert info.shape == (batch,) and (info == 0).all()


@pytest.mark.gpu
def test_gpu_column_major_on_a_stream_and_another_device():
    s = torch.cuda.Stream()
    x = torch.randn(64, 64, dtype=torch.float64, device="cuda")
    with torch.cuda.stream(s):
        wa, _, _ = cc.column_major(x, keep="upper")
    s.synchronize()
    assert torch.equal(wa, x.triu())
    if torch.cuda.device_count() > 1:
        y = x.to("cuda:1")
        wa, _, info = cc.column_major(y, info=True)
        assert wa.device == y.device and torch.equal(wa, y)


def test_launch_on_another_device_loads_and_launches_there(monkeypatch):
    """A tensor on a device that is not current: the kernel is looked up (CuPy loads its
    module on the current device) and launched inside the switch to that device, and the
    handle kept for later calls is that device's. Device switches and the driver faked."""
    import contextlib

    import torch as _torch

    current = {"dev": 0}
    looked_up, launched = [], []

    @contextlib.contextmanager
    def device(idx):
        before, current["dev"] = current["dev"], idx
        try:
            yield
        finally:
            current["dev"] = before

    class Driver:
        @staticmethod
        def launchKernel(fn, *args):
            launched.append((fn, current["dev"]))

    monkeypatch.setattr(_torch.cuda, "device", device)
    monkeypatch.setattr(cc, "current_device", lambda: current["dev"])
    monkeypatch.setattr(cc, "current_stream_ptr", lambda idx: 1000 + idx)
    monkeypatch.setattr(cc, "_DRIVER", Driver)
    monkeypatch.setattr(cc, "_function", lambda idx, itemsize: looked_up.append(
        (idx, current["dev"])) or 500 + idx)
    prep = cc._Prepared(torch.zeros(3, 3), None, None, False)
    prep.idx = 1                                   # as a tensor on cuda:1 would give
    values, params = cc._arg_buffer()
    cc._launch(prep, values, params)
    cc._launch(prep, values, params)               # the handle is kept: looked up once
    assert looked_up == [(1, 1)]
    assert launched == [(501, 1), (501, 1)] and current["dev"] == 0
    current["dev"] = 1                             # now current: no switch, same handle
    cc._launch(prep, values, params)
    assert launched[-1] == (501, 1) and looked_up == [(1, 1)]


def test_every_launch_struct_points_its_kernel_params_at_its_values():
    """The three driver launches (copy prologue, fused kernels, check kernel) share one
    argument-struct type: each thread's kernelParams entry is the address of its values."""
    import threading

    from cusolver_trace.backends import cuda, fused

    def pointers():
        out = []
        for values, params in (cc._arg_buffer(), fused._arg_buffer()):
            assert ctypes.c_void_p.from_address(params).value == values.ctypes.data
            out.append(values.ctypes.data)
        s = cuda._StatusArgs()
        assert ctypes.c_void_p.from_address(s.params_ptr).value == s.values.ctypes.data
        assert s.param.nbytes == 8 * len(cuda._STATUS_FIELDS)
        return out

    here = pointers()
    assert here == pointers()                 # one buffer per thread, kept
    other = []
    t = threading.Thread(target=lambda: other.extend(pointers()))
    t.start()
    t.join()
    assert not set(here) & set(other)         # another thread's own buffers
