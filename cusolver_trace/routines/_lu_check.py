"""What the LU family's routines (:mod:`.lu`) share besides their tables: the validation of
their operands (square A, right-hand sides on A's side, batch shapes that broadcast, pivots)
and the one check (getrf's ``info``, then NaN / Inf, one transfer to the host)."""
from __future__ import annotations

import math

import numpy as np

from .._arrays import Operand, operand, require_square, wrap
from ..errors import NonFiniteError, SingularMatrixError
from ._table import raise_for_info


def square(A, name: str):
    """``(operand, n)`` of a square matrix argument (ValueError / TypeError otherwise)."""
    a = operand(A, name)
    return a, require_square(a, name)


def batch_shape_of(*ops: Operand, names=("A", "B")) -> tuple:
    """The broadcast batch shape of the operands (ValueError when they do not broadcast)."""
    try:
        return tuple(np.broadcast_shapes(*(o.batch_shape for o in ops)))
    except ValueError:
        raise ValueError(f"batch shapes of {names[0]} {ops[0].shape} and {names[1]} "
                         f"{ops[1].shape} do not broadcast") from None


def rhs_fits(b: Operand, n: int, left: bool, what: str) -> int:
    """B's order along A's side (n) is checked; returns nrhs."""
    rows, cols = b.shape[-2:]
    if (rows if left else cols) != n:
        want = f"(..., {n}, nrhs)" if left else f"(..., nrhs, {n})"
        raise ValueError(f"B must have shape {want} to match {what} of order {n} (left={left}), "
                         f"got {b.shape}")
    return cols if left else rows


def pivots_operand(P, lu: Operand, n: int):
    """The pivots as a torch int32 tensor on LU's device (GPU) or a NumPy int array (CPU),
    checked: integers, LU's batch shape plus n, on LU's device; on the CPU each in 1..n (on
    the GPU their values are not read before the library reads them)."""
    import torch

    if isinstance(P, torch.Tensor):
        p = P.detach()
    elif type(P).__module__.startswith("cupy") and hasattr(P, "__dlpack__"):
        p = torch.from_dlpack(P)
    elif isinstance(P, (np.ndarray, list, tuple)):
        p = np.asarray(P)
    else:
        raise TypeError(f"pivots: expected a torch.Tensor, cupy.ndarray or numpy.ndarray, got "
                        f"{type(P).__name__}")
    if tuple(p.shape) != tuple(lu.batch_shape) + (n,):
        raise ValueError(f"pivots must have shape {tuple(lu.batch_shape) + (n,)} (LU's batch "
                         f"shape and n), got {tuple(p.shape)}")
    integer = (p.dtype.kind in "iu" if isinstance(p, np.ndarray)
               else not (p.is_floating_point() or p.is_complex() or p.dtype == torch.bool))
    if not integer:
        raise TypeError(f"pivots must be integers (getrf's 1-based pivots), got {p.dtype}")
    on_gpu = isinstance(p, torch.Tensor) and p.is_cuda
    if on_gpu != lu.on_gpu or (on_gpu and p.device != lu.data.device):
        where = str(p.device) if isinstance(p, torch.Tensor) else "cpu"
        raise ValueError(f"pivots are on {where} but LU is on "
                         f"{lu.data.device if lu.on_gpu else 'cpu'}: move both to one device")
    if on_gpu:
        return p if p.dtype == torch.int32 else p.to(torch.int32)
    p = p.numpy() if isinstance(p, torch.Tensor) else p
    if p.size and (p.min() < 1 or p.max() > n):
        raise ValueError(f"pivots must lie in 1..{n}, got values from {p.min()} to {p.max()}")
    return p


def check_lu(routine: str, info, x, batch_shape, what: str, also=None) -> None:
    """The one check: getrf's ``info`` first (:class:`SingularMatrixError`, naming the
    column and the batch element), then NaN / Inf in ``x`` (or in ``also``: A, where the
    result cannot show them) as :class:`NonFiniteError`. One transfer to the host.

    On a device the non-finite test is maxᵢⱼ |xᵢⱼ| per matrix (``abs``, ``amax``: NaN and Inf
    propagate, no overflow), sent with ``info`` in one float vector: four launches and one
    copy, however large the batch."""
    batch = math.prod(batch_shape)
    if isinstance(x, np.ndarray):
        bad = ~np.isfinite(x).reshape(batch, -1).all(axis=1)
        if also is not None:
            bad |= ~np.isfinite(also).reshape(batch, -1).all(axis=1)
        flat_info = np.asarray(info).reshape(-1)
    else:
        import torch

        mx = x.abs().amax(dim=(-2, -1))
        if also is not None:
            mx = torch.maximum(mx, also.abs().amax(dim=(-2, -1)))
        both = torch.cat((info.reshape(-1).to(device=mx.device, dtype=mx.dtype),
                          mx.reshape(-1))).cpu().numpy()
        flat_info, bad = both[:batch].astype(np.int64), ~np.isfinite(both[batch:])
    raise_for_info(routine, flat_info.reshape(batch_shape), batch_shape, SingularMatrixError)
    hit = np.flatnonzero(bad)
    if hit.size:
        i = int(hit[0])
        raise NonFiniteError(routine, what, i if batch_shape else None, tuple(batch_shape))


def plain(x):
    """A torch result with its conjugate bit resolved (a solve from the right returns Xᴴ's
    memory read as X); NumPy arrays as they are."""
    return x.resolve_conj() if hasattr(x, "resolve_conj") else x


def empty_pivots(like: Operand, shape):
    if like.kind == "numpy":
        return np.zeros(shape, np.int32)
    import torch

    return wrap(torch.zeros(shape, dtype=torch.int32, device=like.data.device), like)
