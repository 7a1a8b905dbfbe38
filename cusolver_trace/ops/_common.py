"""Pieces several op modules share: the CUDA backend (loaded on first use), the call names
of torch's potrs / trsm paths, and the sweep method built on one ``cholesky_inverse`` method."""
from __future__ import annotations

from .. import routines
from . import Method

XPOTRS_CALLS = ("cusolverDnXpotrs → cublas{T}trsm_v2_64 ×2",)
TRSM_CALLS = ("cublas{T}trsm_v2 (L⁻¹)", "cublas{T}trsm_v2 (L⁻ᴴ)")
TRSM_BATCHED_CALLS = ("cublas{T}trsmBatched (L⁻¹)", "cublas{T}trsmBatched (L⁻ᴴ)")


_CUDA = None


def cuda():
    """:mod:`cusolver_trace.backends.cuda`, imported on first use (it loads CuPy / nvmath);
    kept in a global after that, since every replay call asks for it."""
    global _CUDA
    if _CUDA is None:
        from ..backends import cuda as backend

        _CUDA = backend
    return _CUDA


def inverse_method(name: str, *, factor_first: bool = False) -> Method:
    """The sweep method running ``routines.cholesky_inverse(..., method=name)`` with the
    checks as asked; ``factor_first``: on A, through ``routines.potrf`` first (A → A⁻¹)."""
    def make(op, inputs, upper, check):
        if not factor_first:
            return lambda: routines.cholesky_inverse(inputs.x, upper, method=name, check=check)

        def run():
            L, _ = routines.potrf(inputs.x, upper, check=check)
            return routines.cholesky_inverse(L, upper, method=name, check=check)
        return run

    def resolve(inputs):
        return routines.inverse_method(inputs.x, name)

    def flops(inputs, on_gpu):
        return routines.INVERSE_METHODS[resolve(inputs)].flops_name(on_gpu)

    gpu_only = name != "auto" and routines.INVERSE_METHODS[name].gpu_only
    return Method(name, make, gpu_only=gpu_only, checkable=True, flop_count=flops,
                  resolve=resolve)
