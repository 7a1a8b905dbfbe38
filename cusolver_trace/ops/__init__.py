"""The op registry: one module per torch op, holding everything the tools need about it.

An :class:`Op` (:mod:`._model`) carries, referenced directly (no string keys into other
modules):

* the torch call, its options (``upper``; ``left``, ``adjoint``; ``pivot``) and what it
  returns;
* what its inputs are and what of them it reads, built by :func:`prepare_inputs`;
* the dispatch rules per torch version and backend preference, as typed
  :class:`DispatchRule` rows (conditions in a :class:`When`), each with its CUDA replay;
* the CPU path (which LAPACK calls torch makes there) and its replay;
* its judgement: the accuracy check (a LAPACK test ratio), when two failures are alike,
  what a failure means in words; and the flop count;
* the methods a sweep times (:class:`Method`), with the defaults per device.

``compare``, ``sweep``, ``devices``, ``dispatch_docs`` and the CLI loop over
:func:`all_ops` / :func:`get` and never name an op. Adding an op means its bindings, its
backend rows and one module in this package that calls :func:`register`; the package
finds its modules itself. An unknown op, or one that lacks the piece a tool needs, raises
:class:`OpError` — never a fall-back to another op's branch.

Importing this package, and listing the ops, imports neither torch nor the backends.
"""
from __future__ import annotations

import importlib
import pkgutil

from ._model import (ANY, FROM_2_12, FROM_2_13, PREFERENCES, UP_TO_2_11, UP_TO_2_12,
                     DispatchRule, Inputs, LazyMethods, Method, Op, OpError, Option, Options,
                     Point, TorchPath, When, bool_option, check_preferred, current_preference,
                     member_count, parse_version, preferred_library)

__all__ = ["Op", "OpError", "Option", "Options", "Point", "DispatchRule", "When", "Inputs",
           "Method", "TorchPath", "register", "unregister", "get", "all_ops", "names",
           "prepare_inputs", "parse_version", "preferred_library", "current_preference",
           "PREFERENCES", "check_preferred", "bool_option", "member_count", "ANY",
           "UP_TO_2_11", "UP_TO_2_12", "FROM_2_12", "FROM_2_13", "TORCH", "TORCH_CUSOLVER",
           "REPLAY", "all_options", "check_methods", "LazyMethods"]

_REGISTRY: dict[str, Op] = {}
_loaded = False


def _load_builtin() -> None:
    """Import every op module of this package (``_``-prefixed modules are shared pieces)."""
    global _loaded
    if not _loaded:
        _loaded = True
        for mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
            if not mod.startswith("_"):
                importlib.import_module(f"{__name__}.{mod}")


def register(op: Op) -> Op:
    """Add ``op`` to the registry (its module calls this at import); returns it.

    Raises
    ------
    OpError
        The name is taken by another op, or a piece the tools need is missing.
    """
    if not isinstance(op, Op):
        raise OpError(f"register takes an Op, got {type(op).__name__}")
    if op.name in _REGISTRY and _REGISTRY[op.name] is not op:
        raise OpError(f"an op named {op.name!r} is already registered")
    if op.structure not in ("hpd", "general", "hermitian"):
        raise OpError(f"{op.name}: structure must be 'hpd', 'general' or 'hermitian', got "
                      f"{op.structure!r}")
    if "A" not in op.takes:
        raise OpError(f"{op.name}: takes must name 'A' (the matrix the checks refer to)")
    if not all(isinstance(o, Option) for o in op.options):
        raise OpError(f"{op.name}: options must be Option objects")
    if not isinstance(op.methods, LazyMethods):   # lazy ones are checked by the tests
        check_methods(op)
    _REGISTRY[op.name] = op
    return op


def check_methods(op: Op) -> None:
    """Raise :class:`OpError` unless every method is under its own name and every default
    method is one of the op's."""
    for name, m in op.methods.items():
        if name != m.name:
            raise OpError(f"{op.name}: method key {name!r} names method {m.name!r}")
    for dev, default in op.default_methods.items():
        missing = [m for m in default if m not in op.methods]
        if missing:
            raise OpError(f"{op.name}: default methods {missing} for {dev} are not in its methods")


def unregister(name: str) -> None:
    """Remove an op (tests register toy ops and remove them after)."""
    _REGISTRY.pop(name, None)


def get(name) -> Op:
    """The op registered as ``name`` (an :class:`Op` is returned as it is).

    Raises
    ------
    OpError
        No op of that name.

    Examples
    --------
    >>> get("cholesky_inverse").torch_name
    'torch.cholesky_inverse'
    """
    if isinstance(name, Op):
        return name
    _load_builtin()
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise OpError(f"unknown op {name!r}; choose from {', '.join(_REGISTRY)}") from None


def all_ops() -> list[Op]:
    """Every registered op, in registration order."""
    _load_builtin()
    return list(_REGISTRY.values())


def names(*, replayable: bool | None = None) -> tuple[str, ...]:
    """Registered op names (``replayable=True``: those ``compare`` can run)."""
    return tuple(o.name for o in all_ops() if replayable is None or o.replayable == replayable)


def all_options() -> dict[str, Option]:
    """Every option flag of the registered ops: ``flag -> Option`` (the first op's, where
    several ops share a flag; they share its words too). The command line adds one argument
    per flag and refuses a flag the chosen op does not take."""
    out: dict[str, Option] = {}
    for o in all_ops():
        for opt in o.options:
            out.setdefault(opt.flag, opt)
    return out


def prepare_inputs(op, A=None, B=None, *, opts=None, nrhs: int = 1, seed: int = 0,
                   **given) -> Inputs:
    """Build the :class:`Inputs` of ``op`` from A (and B, and what ``given`` hands over).

    Parameters
    ----------
    op : Op or str
    A : torch.Tensor (..., n, n), optional
        The matrix the op's inputs are made from (:attr:`Op.structure`); an op on a
        factorization factors it as torch does (a failure there is noted).
    B : torch.Tensor (..., n, nrhs), optional
        Right-hand sides, for ops that take them (default: ``nrhs`` of seeded standard normal
        values, A's batch shape; ``(..., nrhs, n)`` for a solve from the right,
        :meth:`Op.rhs_dims`).
    opts : Options or mapping, optional
        The op's options (default torch's defaults).
    nrhs : int
    seed : int
    **given : torch.Tensor
        Inputs handed over as they are, by the names in :attr:`Op.takes` (``factor=``,
        ``pivots=``).

    Returns
    -------
    Inputs

    Raises
    ------
    OpError
        A given input the op does not take; B for an op without right-hand sides.
    ValueError
        Neither A nor what the op can make A from; shapes that do not fit.
    """
    import torch

    o = get(op)
    opts = opts if isinstance(opts, Options) else o.options_from(**(opts or {}))
    given = {k: v for k, v in given.items() if v is not None}
    for k in given:
        if k not in o.takes or k in ("A", "B"):
            raise OpError(f"{o.name} takes no {k}= (it takes {', '.join(o.takes)})")
    if A is not None and (A.ndim < 2 or A.shape[-1] != A.shape[-2]):
        raise ValueError(f"A must have shape (..., n, n), got {tuple(A.shape)}")
    inp = o.make_inputs(A, given, opts)
    if o.has_rhs:
        n, batch_shape = inp.A.shape[-1], tuple(inp.A.shape[:-2])
        if B is None:
            if nrhs < 0:
                raise ValueError(f"nrhs must be >= 0, got {nrhs}")
            g = torch.Generator().manual_seed(seed + 1)
            B = torch.randn(*batch_shape, *o.rhs_dims(n, nrhs, opts), generator=g,
                            dtype=torch.float64)
            B = B.to(inp.A.dtype).to(inp.A.device)
        rows_n = o.rhs_dims(n, -1, opts)[0] == n
        if B.ndim < 2 or B.shape[-2 if rows_n else -1] != n or tuple(B.shape[:-2]) != batch_shape:
            want = "(..., n, nrhs)" if rows_n else "(..., nrhs, n)"
            raise ValueError(f"B must have shape {want} with A's batch shape {batch_shape} "
                             f"and n = {n}, got {tuple(B.shape)}")
        if B.dtype != inp.A.dtype or B.device != inp.A.device:
            raise ValueError(f"B ({B.dtype}, {B.device}) must match A ({inp.A.dtype}, "
                             f"{inp.A.device})")
        inp.B = B
    elif B is not None:
        raise OpError(f"{o.name} takes no right-hand sides B")
    return inp


# --------------------------------------------------------------------------- methods every op has
def _torch_make(op, inputs, opts, check):
    return lambda: op.torch_call(inputs, opts)[0]


def _torch_cusolver_make(op, inputs, opts, check):
    def run():
        with preferred_library("cusolver"):
            return op.torch_call(inputs, opts)[0]
    return run


def _replay_make(op, inputs, opts, check):
    call = op.replay_call(inputs, opts)   # decided once, outside the timing loop, as compare does
    return lambda: call()[0]


TORCH = Method("torch", _torch_make)
"""torch's own call (its ``_ex`` form where it has one: no host sync is timed)."""
TORCH_CUSOLVER = Method("torch_cusolver", _torch_cusolver_make, gpu_only=True)
"""torch's call under ``preferred_linalg_library("cusolver")``."""
REPLAY = Method("replay", _replay_make)
"""The exact library calls torch makes (the op's dispatch table)."""
