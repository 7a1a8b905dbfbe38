"""What the symmetric / Hermitian eigensolver ops (``linalg.eigh``, ``linalg.eigvalsh``) share:
the ``UPLO`` option, their inputs (a Hermitian A, of which one triangle is read), torch's
dispatch per version and preference (``../shared/reference/torch-dispatch-lu-eigh.md`` §1, §6,
checked against the H200 API logs of torch 2.11 in ``tests/data/…/lu-eigh``), the replays,
the judgement (LAPACK's eigen test ratios) and the sweep methods built on
:func:`cusolver_trace.routines.eigh` / ``eigvalsh``.

Only the eigensolver ops import this module (``UPLO`` goes nowhere else).
"""
from __future__ import annotations

from types import MappingProxyType

from ._model import (UP_TO_2_11, DispatchRule, Inputs, Method, Option, When, host,  # noqa: F401
                     lazy_backend, on_A)  # on_A: fam.on_A

UPLO = Option(
    "UPLO", "L", ("L", "U"), "--uplo",
    MappingProxyType({"l": "L", "lower": "L", "u": "U", "upper": "U"}),
    MappingProxyType({"L": "L", "U": "U"}),
    "the triangle read: L, U, lower, upper (any case), or a list such as lower,upper "
    "(default lower)", shortcut=("--upper", "U"))
"""``UPLO``: which triangle of A the eigensolver reads (torch's keyword, ``uplo``)."""

NONFINITE_NOTE = ("cuSOLVER's eigensolvers may return NaN eigenvalues with info = 0 on NaN "
                  "input")


def upper(opts) -> bool:
    return opts.UPLO == "U"


def failure_text(k: int) -> str:
    """What ``info = k > 0`` of an eigensolver means."""
    return (f"the algorithm failed to converge (info = {k}: the input is ill-conditioned or "
            "has too many repeated eigenvalues)")


def triangle(x, opts):
    """The triangle of ``x`` the op reads."""
    return x.triu() if upper(opts) else x.tril()


def reads(inputs: Inputs, opts) -> tuple:
    """What an eigensolver reads: the ``UPLO`` triangle of A."""
    return (triangle(inputs.x, opts),)


# --------------------------------------------------------------------------- torch's dispatch
def kind(p) -> str:
    """What torch's ``linalg_eigh`` runs on CUDA: ``"batched"`` (one
    ``cusolverDnXsyevBatched``), ``"xsyevd"`` (``cusolverDnXsyevd`` per matrix), ``"syevj"``
    (``cusolverDnSsyevj`` per matrix), ``"magma"`` (``magma_<t>syevd_gpu`` per matrix) or
    ``"host"`` (a copy to the CPU and LAPACK there).

    * torch >= 2.12: ``"batched"`` for every shape and preference (MAGMA: a warning only);
    * torch 2.11, preferred = magma: ``"magma"`` for n > 128, else ``"host"``;
    * torch 2.11 otherwise (``linalg_eigh_cusolver``): ``"batched"`` for batch > 1 and
      n <= 32; ``"syevj"`` for float32 with 32 <= n <= 512; else ``"xsyevd"``.

    Examples
    --------
    >>> from types import SimpleNamespace as P
    >>> kind(P(version=(2, 11), preferred="default", batch=4, n=8, dtype="float64"))
    'batched'
    >>> kind(P(version=(2, 11), preferred="default", batch=1, n=64, dtype="float32"))
    'syevj'
    >>> kind(P(version=(2, 13), preferred="magma", batch=1, n=1024, dtype="float64"))
    'batched'
    """
    if tuple(p.version) > UP_TO_2_11[1]:
        return "batched"
    if p.preferred == "magma":
        return "magma" if p.n > 128 else "host"
    if p.batch > 1 and p.n <= 32:
        return "batched"
    if p.dtype == "float32" and 32 <= p.n <= 512:
        return "syevj"
    return "xsyevd"


CALLS = {"batched": ("cusolverDnXsyevBatched_bufferSize", "cusolverDnXsyevBatched"),
         "xsyevd": ("cusolverDnXsyevd_bufferSize", "cusolverDnXsyevd × batch"),
         "syevj": ("cusolverDnCreateSyevjInfo", "cusolverDn{T}syevj_bufferSize",
                   "cusolverDn{T}syevj × batch", "cusolverDnDestroySyevjInfo"),
         "magma": ("magma_{t}syevd_gpu / heevd_gpu × batch",),
         "host": ("LAPACK {t}syevd / heevd on a host copy × batch",)}
RULES = {"batched": "one cusolverDnXsyevBatched",
         "xsyevd": "cusolverDnXsyevd per matrix (params NULL)",
         "syevj": "cusolverDn<t>syevj per matrix with a default syevjInfo",
         "magma": "MAGMA syevd_gpu per matrix (replay: cusolverDnXsyevd per matrix as reference)",
         "host": "a copy to the CPU and LAPACK syevd (replay: scipy's LAPACK)"}
NOTES = {"host": "torch copies the matrices to the CPU and runs its bundled LAPACK there; the "
                 "replay runs scipy's LAPACK: agreement is judged by tolerance"}
_API = {"batched": "XsyevBatched", "xsyevd": "Xsyevd", "syevj": "syevj", "magma": "Xsyevd"}
_BACKEND = {"batched": "cusolver", "xsyevd": "cusolver", "syevj": "cusolver",
            "magma": "magma", "host": "lapack"}

cuda = lazy_backend("cuda_eigh")


def shaped(result, vectors: bool):
    """``(w, V)`` as the op returns it: both for ``eigh``, ``w`` alone for ``eigvalsh``."""
    w, V = result
    return (w, V) if vectors else w


def lapack_replay(vectors: bool, name: str):
    """The CPU replay: LAPACK ``?syevd`` / ``?heevd`` per matrix (torch's CPU path)."""
    def replay(inputs, opts):
        import torch

        from ..backends import cpu

        w, V, info = cpu.syevd(host(inputs.x.cpu()), upper(opts), vectors)
        dev = inputs.x.device
        out = (torch.from_numpy(w).to(dev), None if V is None else torch.from_numpy(V).to(dev))
        return shaped(out, vectors), torch.from_numpy(info.reshape(-1)).to(dev)
    replay.__name__ = name
    return replay


def rows(op_name: str, vectors: bool) -> tuple:
    """The op's dispatch rows, one per kind torch can run (:func:`kind`); exact unless torch
    runs MAGMA or LAPACK there."""
    out = []
    for k in ("batched", "xsyevd", "syevj", "magma", "host"):
        if k == "host":
            replay = lapack_replay(vectors, f"{op_name}_host")
        else:
            def replay(inputs, opts, api=_API[k]):
                W, V, info = cuda().syevd(inputs.x, upper(opts), vectors, api)
                return shaped((W, V), vectors), info
            replay.__name__ = f"{op_name}_{k}"
        out.append(DispatchRule(When(test=lambda p, k=k: kind(p) == k, text=k), _BACKEND[k],
                                CALLS[k], replay, k not in ("magma", "host"), RULES[k],
                                NOTES.get(k, "")))
    return tuple(out)


# --------------------------------------------------------------------------- judgement
def check(vectors: bool):
    """The op's check: :func:`cusolver_trace.checks.eig_check` (residual, orthogonality and
    eigenvalues against a float64 reference; eigenvalues only without vectors)."""
    def run(inputs, result, opts):
        from .. import checks

        w, V = (result if vectors else (result, None))
        return checks.eig_check(inputs.A, w, V, upper=upper(opts))
    return run


def vectors_agreement(inputs, t_out, r_out, opts) -> str:
    """How far torch's and the replay's eigenvectors are apart once each column's sign / phase
    is normalized, clustered eigenvalues judged by their invariant subspace
    (:func:`cusolver_trace.checks.eigvec_distance`)."""
    from .. import checks

    (w, Vt), (_, Vr) = t_out, r_out
    d = float(checks.eigvec_distance(Vt, Vr, w))
    return (f"eigenvectors, signs / phases normalized (subspaces for clustered eigenvalues): "
            f"largest difference {d:.3g} (the routines may return different but equally valid "
            "vectors; the verdict rests on the eigen ratios)")


def empty(vectors: bool):
    """What torch returns for n = 0 or an empty batch: eigenvalues (..., n) of the real dtype,
    eigenvectors (..., n, n)."""
    def make(inputs, opts):
        import torch

        A = inputs.x
        real = torch.empty(0, dtype=A.dtype).real.dtype
        w = torch.zeros(A.shape[:-1], dtype=real, device=A.device)
        info = torch.zeros(inputs.batch, dtype=torch.int32, device=A.device)
        return shaped((w, torch.zeros(A.shape, dtype=A.dtype, device=A.device)), vectors), info
    return make


# --------------------------------------------------------------------------- sweep methods
def routine_methods(vectors: bool) -> tuple:
    """The sweep methods running :func:`cusolver_trace.routines.eigh` (or ``eigvalsh``) through
    each row of :data:`cusolver_trace.routines.SYEV` but ``torch``, and ``auto``."""
    from .. import routines

    table = routines.SYEV

    def method(name: str) -> Method:
        def make(op, inputs, opts, check):
            fn = routines.eigh if vectors else routines.eigvalsh
            return lambda: fn(inputs.x, UPLO=opts.UPLO, check=check, method=name)

        def resolve(inputs):
            x = inputs.x
            return table.resolve(name, inputs.n, inputs.batch, x.dtype, x.device.type)

        def flops(inputs, on_gpu):
            return "syevd" if vectors else "syevd_values"

        def workspace(inputs):
            return table.row(resolve(inputs)).workspace

        return Method(name, make, gpu_only=name != "auto" and table.row(name).gpu_only,
                      checkable=True, flop_count=flops, resolve=resolve, workspace=workspace)

    return tuple(method(name) for name in table.names if name != "torch")
