"""What the Cholesky family's op modules share: the ``upper`` option, their inputs (A, or
its factor made as torch makes it), what they read (one triangle), the pivot rule that says
when two failures are alike, the words for a failure, the call names of torch's potrs /
trsm paths, and the sweep methods built on one ``cholesky_inverse`` method.

Only the Cholesky family's modules import this one (``upper`` goes nowhere else).
"""
from __future__ import annotations

from ._model import Inputs, Method, OpError, bool_option

UPPER = bool_option(
    "upper", False, "--uplo", ("u", "upper"), ("l", "lower"), {False: "L", True: "U"},
    "the triangle read: L, U, lower, upper (any case), or a list such as lower,upper "
    "(default lower)", shortcut=("--upper", True))
"""``upper``: which triangle of A (and of its factor) the op reads (``uplo``)."""

XPOTRS_CALLS = ("cusolverDnXpotrs → cublas{T}trsm_v2_64 ×2",)
TRSM_CALLS = ("cublas{T}trsm_v2 (L⁻¹)", "cublas{T}trsm_v2 (L⁻ᴴ)")
TRSM_BATCHED_CALLS = ("cublas{T}trsmBatched (L⁻¹)", "cublas{T}trsmBatched (L⁻ᴴ)")

NONFINITE_NOTE = ("cuSOLVER potrs reports nothing for a singular factor and potrf can return "
                  "info = 0 on NaN input")


def failure_text(k: int) -> str:
    """What ``info = k`` of a Cholesky factorization means."""
    return f"the leading minor of order {k} is not positive definite"


def triangle(x, opts):
    """The triangle of ``x`` the op reads."""
    return x.triu() if opts.upper else x.tril()


def reads(inputs: Inputs, opts) -> tuple:
    """What a Cholesky-family op reads: the ``upper`` / lower triangle of its matrix
    argument, and B."""
    t = (triangle(inputs.x, opts),)
    return t if inputs.B is None else t + (inputs.B,)


def inputs_on_A(A, given: dict, opts) -> Inputs:
    """Inputs of an op on A itself (``linalg.cholesky``, A → A⁻¹)."""
    if A is None:
        raise ValueError("need A")
    return Inputs(A, A)


def inputs_on_factor(A, given: dict, opts) -> Inputs:
    """Inputs of an op on A's Cholesky factor: ``torch.linalg.cholesky_ex(A, upper)``, or
    the ``factor`` handed over (e.g. a singular one; A defaults to L·Lᴴ (Uᴴ·U) of its
    triangle, for the ratios). A failed factorization is noted, naming the minor and the
    batch element, and the partial factor is used.

    Raises
    ------
    ValueError
        Neither A nor a factor; shapes that do not fit.
    """
    import torch

    factor = given.get("factor")
    if factor is not None:
        if factor.ndim < 2 or factor.shape[-1] != factor.shape[-2]:
            raise ValueError(f"factor must have shape (..., n, n), got {tuple(factor.shape)}")
        F = triangle(factor, opts)
        if A is None:
            A = F.mH @ F if opts.upper else F @ F.mH
        if tuple(factor.shape) != tuple(A.shape):
            raise ValueError(f"factor {tuple(factor.shape)} and A {tuple(A.shape)} differ in shape")
        return Inputs(A, factor)
    if A is None:
        raise ValueError("need A (or factor= for an op on the Cholesky factor)")
    x, finfo = torch.linalg.cholesky_ex(A, upper=opts.upper)
    inp = Inputs(A, x)
    flat = [int(v) for v in finfo.reshape(-1).cpu()]
    first = next(((i, k) for i, k in enumerate(flat) if k), None)
    if first is not None:
        i, k = first
        where = f" of batch element {i}" if A.ndim > 2 else ""
        inp.factor_failed = True
        inp.notes.append(
            f"torch.linalg.cholesky of A failed (its leading minor of order {k}{where} is not "
            "positive definite); the partial factor is handed to both sides, so neither result "
            "refers to A and the ratios do not apply")
    return inp


def near_failure(inputs: Inputs, result, member: int, k: int) -> bool:
    """The pivot rule: the factor of batch member ``member`` has its pivot k at the rounding
    level, ``L[k-1, k-1]² <= 30·n·eps·max|A_ii|`` (the minor of order k is singular to
    working precision, and a failure there is LAPACK's answer too)."""
    from .._dtypes import dtype_info

    n = inputs.n
    if k < 1 or k > n:
        return False
    L = result[0] if isinstance(result, tuple) else result
    tol = 30 * n * dtype_info(inputs.x.dtype).lapack_eps
    pivot = float(abs(L.reshape(-1, n, n)[member, k - 1, k - 1]) ** 2)
    scale = float(inputs.A.reshape(-1, n, n)[member].diagonal().abs().max())
    return pivot <= tol * scale


def factor_given(op_name: str):
    """``make_inputs`` of an op on A itself: refuses ``factor=``."""
    def make(A, given, opts):
        if given:
            raise OpError(f"factor= is for ops on a Cholesky factor; {op_name} takes A")
        return inputs_on_A(A, given, opts)
    return make


def inverse_method(name: str, *, factor_first: bool = False) -> Method:
    """The sweep method running ``routines.cholesky_inverse(..., method=name)`` with the
    checks as asked; ``factor_first``: on A, through ``routines.potrf`` first (A → A⁻¹)."""
    from .. import routines

    def make(op, inputs, opts, check):
        if not factor_first:
            return lambda: routines.cholesky_inverse(inputs.x, opts.upper, method=name,
                                                     check=check)

        def run():
            L, _ = routines.potrf(inputs.x, opts.upper, check=check)
            return routines.cholesky_inverse(L, opts.upper, method=name, check=check)
        return run

    def resolve(inputs):
        return routines.inverse_method(inputs.x, name)

    def flops(inputs, on_gpu):
        return routines.INVERSE_METHODS[resolve(inputs)].flops_name(on_gpu)

    def workspace(inputs):
        return None if factor_first else routines.INVERSE_METHODS[resolve(inputs)].workspace

    gpu_only = name != "auto" and routines.INVERSE_METHODS[name].gpu_only
    return Method(name, make, gpu_only=gpu_only, checkable=True, flop_count=flops,
                  resolve=resolve, workspace=workspace)


_CUDA = None


def cuda():
    """:mod:`cusolver_trace.backends.cuda`, imported on first use (it loads CuPy / nvmath);
    kept in a global after that, since every replay call asks for it."""
    global _CUDA
    if _CUDA is None:
        from ..backends import cuda as backend

        _CUDA = backend
    return _CUDA


def host(t):
    """A CPU tensor's values as a NumPy array for LAPACK (conjugate / negative bits resolved)."""
    return t.detach().resolve_conj().resolve_neg().numpy()
