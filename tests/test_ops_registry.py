"""The op registry: a toy op defined here runs through compare and the sweep on the CPU;
the tools never name an op; missing pieces raise OpError instead of running another op."""
from __future__ import annotations

import ast
import pathlib

import pytest
import torch
from hypothesis import given, settings, strategies as st

import cusolver_trace as ct
from cusolver_trace import checks, ops
from cusolver_trace.compare import compare
from cusolver_trace.matrices import spd
from cusolver_trace.sweep import make_case, measure_case, run_sweep

PACKAGE = pathlib.Path(ct.__file__).parent


# --------------------------------------------------------------------------- a toy op
TRIANGLE = ops.bool_option("upper", False, "--uplo", ("u", "upper"), ("l", "lower"),
                           {False: "L", True: "U"}, "the triangle", shortcut=("--upper", True))


def _toy_torch(inputs, opts):
    """torch's triangular inverse of the factor: solve_triangular(L, I)."""
    n = inputs.n
    eye = torch.eye(n, dtype=inputs.x.dtype).expand(inputs.x.shape)
    tri = inputs.x.triu() if opts.upper else inputs.x.tril()
    return torch.linalg.solve_triangular(tri, eye, upper=opts.upper), None


def toy_lapack_trtri(inputs, opts):
    """The replay: LAPACK ?trtri through the project's CPU backend."""
    from cusolver_trace.backends import cpu

    return cpu.trtri(inputs.x.numpy(), opts.upper)


def _toy_cuda_replay(inputs, opts):  # pragma: no cover - the test runs on the CPU
    from cusolver_trace.backends import cuda

    return cuda.trtri(inputs.x, opts.upper)


def _toy_inputs(A, given, opts):
    """The toy takes A's Cholesky factor, as torch makes it."""
    return ops.Inputs(A, torch.linalg.cholesky(A, upper=opts.upper))


def _trt01(inputs, Tinv, opts):
    """LAPACK's ?trt01-style ratio ‖T·T⁻¹ − I‖₁ / (n·‖T‖₁·‖T⁻¹‖₁·eps)."""
    T = inputs.x.triu() if opts.upper else inputs.x.tril()
    n = T.shape[-1]
    eps = ct.dtype_info(T.dtype).lapack_eps
    r = torch.eye(n, dtype=T.dtype) - T @ Tinv
    one = lambda X: X.abs().sum(-2).amax(-1)  # noqa: E731
    return checks.batch_max(one(r) / (n * one(T) * one(Tinv) * eps))


def _routine_method(op, inputs, opts, check):
    return lambda: ct.trtri(inputs.x, opts.upper, check=check)


def make_toy(name="toy_trtri", **over):
    kw = dict(
        name=name, summary="toy: triangular inverse of the factor", torch_name="solve_triangular",
        options=(TRIANGLE,), structure="hpd", make_inputs=_toy_inputs,
        torch_call=_toy_torch,
        dispatch=(ops.DispatchRule(ops.When(), "cusolver", ("cusolverDnXtrtri",), _toy_cuda_replay,
                                   True, "any batch"),),
        cpu_calls=("LAPACK {t}trtri",), cpu_replay=toy_lapack_trtri, check_name="trt01",
        check=_trt01, reads=lambda inputs, opts: (inputs.x.triu() if opts.upper
                                                   else inputs.x.tril(),),
        flop_count=lambda inputs, on_gpu: "trtri",
        methods={m.name: m for m in (ops.TORCH, ops.REPLAY,
                                     ops.Method("trtri", _routine_method, checkable=True))},
        default_methods={"cpu": ("torch", "replay", "trtri")})
    kw.update(over)
    return ops.Op(**kw)


@pytest.fixture
def toy():
    op = ops.register(make_toy())
    yield op
    ops.unregister(op.name)


def test_toy_op_runs_through_compare_on_the_cpu(toy):
    A = spd(24, cond=10, dtype="float64", seed=3)
    A_before = A.clone()
    c = compare("toy_trtri", A, repeat=3, warmup=1, provenance=False)
    assert c.op == "toy_trtri" and c.path.backend == "lapack"
    assert c.path.calls == ("LAPACK dtrtri",) and c.path.replay == "toy_lapack_trtri"
    assert c.verdict in ("bitwise-equal", "within-tolerance")
    assert c.torch.ratio_name == "trt01" and c.torch.ratio < 30 and c.replay.ratio < 30
    # the replay really computed T⁻¹ (not a Cholesky branch): T·T⁻¹ = I
    L = torch.linalg.cholesky(A)
    X, _, _ = ct.replay("toy_trtri", L)
    torch.testing.assert_close(L @ X, torch.eye(24, dtype=torch.float64), atol=1e-12, rtol=0)
    assert torch.equal(A, A_before)


def test_toy_op_runs_through_the_sweep_on_the_cpu(toy, cpu_load_ignored):
    rows = run_sweep("toy_trtri", n=[16], batch=[1, 3], device="cpu", repeat=2, warmup=0,
                     progress=False, unchecked=True)
    by = {(r["method"], r["batch"], r["checked"]): r for r in rows}
    assert {m for m, _, _ in by} == {"torch", "replay", "trtri"}
    for r in rows:
        assert r["op"] == "toy_trtri" and r["status"] == "ok" and r["check"] == "trt01"
        assert r["ratio"] < 30 and r["flop_count"] == "trtri"
        assert r["gflops"] > 0
    # the checked entry point has an unchecked twin and a check-overhead ratio
    assert ("trtri", 3, False) in by and by["trtri", 3, True]["check_overhead"] > 0
    assert by["trtri", 1, True]["gflops"] == pytest.approx(
        checks.flops("trtri", 16) / (by["trtri", 1, True]["median_ms"] * 1e-3) / 1e9)


def test_toy_op_is_on_the_command_line(toy, tmp_path, capsys):
    from cusolver_trace.cli import main

    out = tmp_path / "c.json"
    assert main(["compare", "--op", "toy_trtri", "--n", "12", "--repeat", "2",
                 "--json", str(out)]) == 0
    import json

    data = json.loads(out.read_text())
    assert isinstance(data, list) and data[0]["op"] == "toy_trtri"
    assert data[0]["spec"]["seed"] == 0 and data[0]["spec"]["date"]


# --------------------------------------------------------------------------- missing pieces
def test_unknown_op_is_an_error_not_a_fallback():
    with pytest.raises(ops.OpError, match="unknown op 'cholesky_inv'"):
        ops.get("cholesky_inv")
    with pytest.raises(ops.OpError):
        compare("no_such_op", spd(4))
    with pytest.raises(ops.OpError):
        ct.torch_path("no_such_op", batch=1, n=4)
    with pytest.raises(ops.OpError):
        make_case("no_such_op", 4)


def test_an_op_without_a_replay_is_refused_by_compare():
    op = ops.register(make_toy("toy_no_replay", dispatch=(), cpu_replay=None))
    try:
        with pytest.raises(ops.OpError, match="no replay"):
            compare("toy_no_replay", spd(8), timing=False, provenance=False)
        assert "toy_no_replay" not in ops.names(replayable=True)
        # the sweep still times what the op has
        rows = run_sweep("toy_no_replay", n=[8], device="cpu", method_names=["torch", "trtri"],
                         repeat=1, warmup=0, progress=False)
        assert [r["status"] for r in rows] == ["ok", "ok"]
    finally:
        ops.unregister(op.name)


def test_unknown_method_and_bad_registration_are_errors(toy):
    with pytest.raises(ops.OpError, match="has no method 'potri'"):
        toy.method("potri")
    with pytest.raises(ops.OpError, match="has no method 'potri'"):
        measure_case(make_case("toy_trtri", 8, device="cpu"), ["potri"], repeat=1, warmup=0)
    with pytest.raises(ops.OpError):
        run_sweep("toy_trtri", n=[8], device="cpu", method_names=["rec_trtri_lauum"],
                  progress=False)
    with pytest.raises(ops.OpError, match="already registered"):
        ops.register(make_toy())
    with pytest.raises(ops.OpError, match="not in its methods"):
        ops.register(make_toy("toy_bad", default_methods={"cpu": ("torch", "nope")}))
    assert "toy_bad" not in ops.names()


def test_every_builtin_op_is_complete():
    for op in ops.all_ops():
        assert op.torch_name and op.check_name in ("pot01", "pot02", "pot03", "get01", "get02",
                                                   "get03", "det", "slogdet", "syt21", "eigvals")
        ops.check_methods(op)   # lazy method tables are checked here, not at registration
        assert "torch" in op.methods and set(op.default_methods) == {"cuda", "cpu"}
        for dev, names in op.default_methods.items():
            assert all(n in op.methods for n in names)
            if dev == "cpu":
                assert not any(op.methods[n].gpu_only for n in names)
        if op.replayable:
            assert op.dispatch[-1].when.batch_min >= 1


# --------------------------------------------------------------------------- no op name outside ops/
def _string_constants(path: pathlib.Path):
    tree = ast.parse(path.read_text())
    skip = set()
    for node in ast.walk(tree):  # names exported in __all__ are function names, not op keys
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            skip |= {id(c) for c in ast.walk(node.value)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def test_no_op_name_is_written_outside_ops():
    """No tool names an op. The layers below the registry are not tools: the array routines
    share names with the torch ops they mirror (``cholesky_inverse``), and a backend's kernel
    kinds may be words such as ``"solve"``."""
    names = set(ops.names())
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] in ("ops", "routines", "backends", "raw"):
            continue
        found += [f"{path.relative_to(PACKAGE)}:{line} {value!r}"
                  for line, value in _string_constants(path) if value in names]
    assert found == []


def test_only_the_backends_import_the_raw_layer():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ("raw", "backends"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and (
                    node.module == "raw" or node.module.startswith("raw.")
                    or ".raw" in f".{node.module}" and node.level > 0 and node.module.split(".")[0] == "raw"):
                offenders.append(f"{rel}:{node.lineno}")
    assert offenders == []


def test_the_cli_choices_come_from_the_registry(toy, capsys):
    from cusolver_trace.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["compare", "--op", "toy_trtri"])
    assert args.op == "toy_trtri"
    with pytest.raises(SystemExit) as e:
        parser.parse_args(["compare", "--op", "spd_inverse"])  # no replay: not a compare choice
    assert e.value.code == 2
    sweep_ops = parser._subparsers._group_actions[0].choices["sweep"]
    assert "spd_inverse" in sweep_ops.format_help() and "toy_trtri" in sweep_ops.format_help()


@pytest.mark.parametrize("kw", [dict(device="gpu"), dict(preferred="foo"), dict(n=-1),
                                dict(batch=1.5), dict(n=True), dict(nrhs=-2)])
def test_torch_path_refuses_what_it_does_not_understand(kw):
    from cusolver_trace import ops

    args = dict(batch=1, n=4)
    args.update(kw)
    with pytest.raises(ValueError):
        ops.get("cholesky_solve").torch_path(**args)


@settings(max_examples=150, deadline=None)
@given(
    batch=st.one_of(
        st.integers(-2, 9),
        st.floats(allow_nan=True),
        st.booleans()),
    n=st.one_of(
        st.integers(-2, 300),
        st.text(max_size=2)),
    device=st.sampled_from(["cuda", "cpu", "cuda:1", "gpu", "", None]),
    preferred=st.sampled_from(
        [None, "default", "cusolver", "magma", "foo", "CUSOLVER", ""]))
def test_property_torch_path_answers_or_raises_a_documented_error(batch, n, device, preferred):
    from cusolver_trace import ops

    try:
        p = ops.get("cholesky").torch_path(batch=batch, n=n, device=device, preferred=preferred,
                                          torch_version="2.11.0")
    except (ValueError, TypeError):
        return
    assert isinstance(batch, int) and not isinstance(batch, bool) and batch >= 0
    assert isinstance(n, int) and n >= 0
    assert str(device).split(":")[0] in ("cuda", "cpu")
    assert preferred in (None, "default", "cusolver", "magma")
    assert p.calls and p.backend in ("cusolver", "cublas", "magma", "lapack")
