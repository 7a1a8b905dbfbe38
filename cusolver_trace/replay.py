"""Replays of exactly the library calls torch makes for its linear-algebra ops.

The dispatch rules live with each op (:mod:`cusolver_trace.ops`: typed rows per torch
version and backend preference, established from PyTorch's sources, the symbols of the
official wheels 2.3.1, 2.11.0, 2.12.0, 2.13.0, 2.14.1 and real cuSOLVER / cuBLAS API
logs of torch 2.11.0+cu130 on an H200; see ``docs/dispatch.md``). This module is the
functional face of that registry:

* :func:`torch_path` — "which calls does torch make for this op, shape, version and
  backend preference?";
* :func:`replay` — run those calls through the backends on the same inputs (where torch
  runs MAGMA, which this project does not call, the cuSOLVER path as a reference, flagged
  as not bitwise).

Every replay runs inside an NVTX range named by :func:`nvtx_labels` (``replay <op>:
<library calls> n=… batch=…``), so that an Nsight Systems timeline names the replay's
kernels; without the ``nvtx`` package the range is a shared no-op
(:func:`cusolver_trace.tracing.nvtx_range`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import ops
from .ops import TorchPath, parse_version, preferred_library
from .tracing.nvtx import nvtx_range

if TYPE_CHECKING:  # pragma: no cover - for the annotations only
    import torch

__all__ = ["TorchPath", "torch_path", "replay", "parse_version", "preferred_library",
           "nvtx_labels"]


def nvtx_labels(op, inputs, path: TorchPath) -> tuple[str, str]:
    """NVTX range names for torch's call and for its replay on these inputs.

    Parameters
    ----------
    op : cusolver_trace.ops.Op
    inputs : cusolver_trace.ops.Inputs
    path : TorchPath

    Returns
    -------
    (str, str)
        ``"torch <function> n=… batch=…[ nrhs=…]"`` and
        ``"replay <op>: <call> → <call> n=… batch=…[ nrhs=…]"``.

    Examples
    --------
    >>> import torch
    >>> o = ops.get("cholesky_inverse")
    >>> x = torch.eye(3, dtype=torch.float64)
    >>> p = o.torch_path(batch=1, n=3, device="cpu")
    >>> nvtx_labels(o, ops.Inputs(x, x), p)[1]
    'replay cholesky_inverse: LAPACK dpotri → mirror triangle n=3 batch=1'
    """
    shape = f"n={inputs.n} batch={inputs.batch}" + (
        f" nrhs={inputs.nrhs}" if inputs.nrhs is not None else "")
    return (f"torch {op.torch_name} {shape}",
            f"replay {op.name}: {' → '.join(path.calls)} {shape}")


def torch_path(op: str, *, batch: int, n: int, nrhs: int | None = None, dtype: Any = "float64",
               device: str = "cuda", torch_version: str | None = None,
               preferred: str | None = None, **options: Any) -> TorchPath:
    """Which library calls torch makes for ``op`` on inputs of this shape.

    Parameters
    ----------
    op : str
        A registered op (:func:`cusolver_trace.ops.names`).
    batch : int
        Number of matrices (product of the batch dimensions).
    n, nrhs : int
        Matrix order; right-hand sides (ops with B; default n).
    dtype : str or dtype
    device : {"cuda", "cpu"}
    torch_version : str, optional
        Default: the installed torch.
    preferred : {"default", "cusolver", "magma"}, optional
        ``torch.backends.cuda.preferred_linalg_library()``; None reads it.
    **options
        The op's options (``upper=True``, ``adjoint=True``; default torch's defaults).

    Returns
    -------
    TorchPath

    Raises
    ------
    cusolver_trace.ops.OpError
        Unknown op, or an op without a dispatch table (a ``ValueError``).
    TypeError
        An option the op does not take.

    Examples
    --------
    >>> torch_path("cholesky_inverse", batch=4, n=256, torch_version="2.13.0").backend
    'cublas'
    """
    return ops.get(op).torch_path(batch=batch, n=n, nrhs=nrhs, dtype=dtype, device=device,
                                  torch_version=torch_version, preferred=preferred,
                                  options=options)


def replay(op: str, x: "torch.Tensor", b: "torch.Tensor | None" = None, *,
           pivots: "torch.Tensor | None" = None, path: TorchPath | None = None,
           torch_version: str | None = None, preferred: str | None = None,
           **options: Any) -> tuple[Any, "torch.Tensor", TorchPath]:
    """Run torch's library calls for ``op`` through the backends.

    Parameters
    ----------
    op : str
        A registered op with a replay.
    x : torch.Tensor (..., n, n)
        The op's matrix argument (A, or a factorization of it); CUDA (cuSOLVER / cuBLAS) or
        CPU (scipy LAPACK).
    b : torch.Tensor (..., n, nrhs), optional
        Right-hand sides (ops with B; same batch shape as x).
    pivots : torch.Tensor (..., n), optional
        The factorization's pivots, for ops that take them.
    path : TorchPath, optional
        Default: :func:`torch_path` for these inputs.
    torch_version, preferred
        As :func:`torch_path`.
    **options
        The op's options (default torch's defaults).

    Returns
    -------
    (result, info, path)
        ``result`` as torch returns it; ``info`` an int32 tensor, one per matrix
        (potrs-type calls report illegal arguments only). Nothing is checked or
        synchronized.

    Raises
    ------
    cusolver_trace.ops.OpError
        Unknown op, or one without a replay.

    Examples
    --------
    >>> import torch
    >>> L = torch.tensor([[2.0, 0.0], [1.0, 1.0]], dtype=torch.float64)
    >>> X, info, path = replay("cholesky_inverse", L)
    >>> path.backend, X
    ('lapack', tensor([[ 0.5000, -0.5000],
            [-0.5000,  1.0000]], dtype=torch.float64))
    """
    o = ops.get(op)
    o.require_replay()
    opts = o.options_from(**options)
    inputs = ops.Inputs(x, x, b, pivots)
    if path is None:
        path = o.path_for(inputs, opts, torch_version=torch_version, preferred=preferred)
    with nvtx_range(nvtx_labels(o, inputs, path)[1], color="green"):
        return o.run_replay(inputs, opts, path)
