"""The op registry: one module per torch op, holding everything the tools need about it.

An :class:`Op` carries, referenced directly (no string keys into other modules):

* the torch call and what it returns (``info`` or not);
* what its inputs are (a Hermitian positive definite A, its factor, right-hand sides),
  built by :func:`prepare_inputs`;
* the dispatch rules per torch version and backend preference, as typed
  :class:`DispatchRule` rows (conditions in a :class:`When`), each with its CUDA replay;
* the CPU path (which LAPACK calls torch makes there) and its replay;
* the accuracy check (LAPACK's pot01 / pot02 / pot03) and the flop count;
* the methods a sweep times (:class:`Method`), with the defaults per device.

``compare``, ``sweep``, ``devices``, ``dispatch_docs`` and the CLI loop over
:func:`all_ops` / :func:`get` and never name an op. Adding an op means its
bindings, its backend routines and one module here that calls :func:`register`.
An unknown op, or one that lacks the piece a tool needs, raises
:class:`OpError` — never a fall-back to another op's branch.
"""
from __future__ import annotations

import contextlib
import importlib
import re
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Op", "OpError", "DispatchRule", "When", "Inputs", "Method", "TorchPath", "register",
           "unregister", "get", "all_ops", "names", "prepare_inputs", "parse_version",
           "preferred_library", "current_preference", "PREFERENCES", "check_preferred", "ANY",
           "UP_TO_2_11", "FROM_2_12", "TORCH", "TORCH_CUSOLVER", "REPLAY"]

#: The backend preferences a comparison can ask for (torch's ``preferred_linalg_library``).
PREFERENCES = (None, "default", "cusolver", "magma")


def check_preferred(preferred) -> None:
    """Raise ``ValueError`` unless ``preferred`` is one of :data:`PREFERENCES` (the one check,
    for :meth:`Op.torch_path` and :func:`cusolver_trace.compare.compare`)."""
    if preferred not in PREFERENCES:
        raise ValueError(f"preferred must be 'default', 'cusolver' or 'magma', got {preferred!r}")


class OpError(ValueError):
    """An unknown op, or an op that lacks what a tool asked of it."""


def parse_version(v) -> tuple[int, int]:
    """``"2.11.0+cu130"`` → ``(2, 11)``.

    Raises
    ------
    ValueError
        Not a version string.
    """
    m = re.match(r"(\d+)\.(\d+)", str(v))
    if not m:
        raise ValueError(f"cannot parse torch version {v!r}")
    return int(m.group(1)), int(m.group(2))


ANY = ((0, 0), (99, 99))
UP_TO_2_11 = ((0, 0), (2, 11))
FROM_2_12 = ((2, 12), (99, 99))


@dataclass(frozen=True)
class When:
    """Conditions of a dispatch row; all must hold (bounds inclusive, None = any).

    Attributes
    ----------
    torch : ((major, minor), (major, minor))
        Range of torch versions.
    batch_min, batch_max : int
        Number of matrices (product of the batch dimensions).
    n_min : int
        Matrix order.
    nrhs_min, nrhs_max : int
        Right-hand sides (ops with a B).
    preferred : tuple of str or None
        Values of ``torch.backends.cuda.preferred_linalg_library()`` (lower case).
    """

    torch: tuple = ANY
    batch_min: int = 1
    batch_max: int | None = None
    n_min: int = 0
    nrhs_min: int = 0
    nrhs_max: int | None = None
    preferred: tuple | None = None

    def matches(self, version, batch: int, n: int, nrhs: int, preferred: str) -> bool:
        lo, hi = self.torch
        return (lo <= tuple(version) <= hi
                and self.batch_min <= batch and (self.batch_max is None or batch <= self.batch_max)
                and self.n_min <= n
                and self.nrhs_min <= nrhs and (self.nrhs_max is None or nrhs <= self.nrhs_max)
                and (self.preferred is None or preferred in self.preferred))

    def describe(self) -> str:
        parts = []
        if self.batch_max == 1:
            parts.append("batch == 1")
        elif self.batch_min > 1:
            parts.append(f"batch >= {self.batch_min}" if self.batch_max is None
                         else f"{self.batch_min} <= batch <= {self.batch_max}")
        return ", ".join(parts)


@dataclass
class Inputs:
    """The inputs of one op call, on one device.

    Attributes
    ----------
    A : torch.Tensor (..., n, n)
        The Hermitian positive definite matrix the accuracy checks refer to.
    x : torch.Tensor (..., n, n)
        The op's matrix argument: A itself, or A's Cholesky factor.
    B : torch.Tensor (..., n, nrhs) or None
        Right-hand sides, for ops that take them.
    notes : list of str
        What a reader should know about these inputs (e.g. A is not positive definite).
    factor_failed : bool
        Factoring A failed, so x is a partial factor (ratios do not apply).
    """

    A: object
    x: object
    B: object = None
    notes: list = field(default_factory=list)
    factor_failed: bool = False

    @property
    def n(self) -> int:
        return self.x.shape[-1]

    @property
    def batch_shape(self) -> tuple:
        return tuple(self.x.shape[:-2])

    @property
    def batch(self) -> int:
        b = 1
        for d in self.batch_shape:
            b *= d
        return b

    @property
    def nrhs(self) -> int | None:
        return None if self.B is None else self.B.shape[-1]

    @property
    def on_cuda(self) -> bool:
        return self.x.device.type == "cuda"


@dataclass(frozen=True)
class DispatchRule:
    """One row of an op's dispatch table: when torch makes which library calls.

    Attributes
    ----------
    when : When
        The conditions.
    backend : str
        ``"cusolver"``, ``"cublas"`` or ``"magma"``.
    calls : tuple of str
        The library routines, in order (``{t}`` / ``{T}`` = type letter).
    replay : callable
        ``(inputs: Inputs, upper: bool) -> (result, info)`` running the same calls on CUDA
        (where torch runs MAGMA, which this project does not call: the cuSOLVER path as a
        reference, with ``bitwise=False``).
    bitwise : bool
        The replay runs the same routines: bit-for-bit agreement is expected.
    rule : str
        The condition in words, for reports.
    """

    when: When
    backend: str
    calls: tuple
    replay: Callable
    bitwise: bool
    rule: str


@dataclass(frozen=True)
class TorchPath:
    """What torch runs for one call.

    ``backend``: ``"cusolver"``, ``"cublas"``, ``"magma"`` or ``"lapack"``;
    ``calls``: the library routines, in order; ``replay``: the name of the replay
    function that runs the same calls; ``bitwise``: whether the replay runs the same
    routines (bit-for-bit agreement expected); ``rule``: the matching condition;
    ``note``: anything a reader should know.
    """

    op: str
    backend: str
    calls: tuple
    replay: str
    bitwise: bool
    rule: str
    note: str = ""

    def to_dict(self):
        return asdict(self)


@contextlib.contextmanager
def preferred_library(lib: str | None):
    """Set ``torch.backends.cuda.preferred_linalg_library(lib)`` inside the block, restore
    after (``None``: leave it as it is)."""
    import torch

    if lib is None:
        yield
        return
    old = torch.backends.cuda.preferred_linalg_library()
    torch.backends.cuda.preferred_linalg_library(lib)
    try:
        yield
    finally:
        torch.backends.cuda.preferred_linalg_library(old)


def current_preference() -> str:
    """``torch.backends.cuda.preferred_linalg_library()`` as a lower-case name."""
    import torch

    return str(torch.backends.cuda.preferred_linalg_library()).split(".")[-1].lower()


@dataclass(frozen=True)
class Method:
    """One way a sweep can compute an op's result.

    Attributes
    ----------
    name : str
    make : callable
        ``(op: Op, inputs: Inputs, upper: bool, check: bool) -> zero-argument callable``
        returning the result without synchronizing unless ``check`` asks for it.
    gpu_only : bool
    checkable : bool
        ``make`` honours ``check`` (a public entry point with checks); the sweep can time an
        unchecked twin beside it.
    flop_count : callable or None
        ``(inputs, on_gpu) -> count name`` (:func:`cusolver_trace.checks.flops`); None: the op's.
    resolve : callable or None
        ``(inputs) -> str``: what the method runs (``auto`` resolved); None: itself.
    """

    name: str
    make: Callable
    gpu_only: bool = False
    checkable: bool = False
    flop_count: Callable | None = None
    resolve: Callable | None = None

    def resolved(self, inputs) -> str:
        return self.resolve(inputs) if self.resolve is not None else self.name


@dataclass(frozen=True)
class Op:
    """Everything the tools need about one torch op (see the module docstring).

    Attributes
    ----------
    name : str
        The registry key (``--op`` on the command line).
    summary : str
        One line for ``--help``.
    torch_name : str
        The torch function as the reports name it.
    torch_call : callable
        ``(inputs, upper) -> (result, info or None)``.
    matrix : str
        What ``x`` is: ``"A"`` (the Hermitian positive definite matrix) or ``"factor"``.
    has_rhs : bool
        The op takes right-hand sides B (..., n, nrhs).
    dispatch : tuple of DispatchRule
        CUDA paths; rows tried in order, the first match wins. Empty: no replay.
    cpu_calls : tuple of str
        The LAPACK calls torch's CPU path makes.
    cpu_replay : callable or None
        ``(inputs, upper) -> (result ndarray, info ndarray)`` through scipy's LAPACK.
    check_name : str
        ``"pot01"`` / ``"pot02"`` / ``"pot03"``.
    check : callable
        ``(inputs, result, upper) -> BatchMax`` (LAPACK ratio; < 30 passes); it reads only
        the triangle the op reads.
    reports_info : bool
        torch's call returns ``info`` (e.g. ``linalg.cholesky_ex``).
    fails_on_info : bool
        ``info > 0`` means the result's contents are unspecified (potrf): a failing
        verdict compares info only.
    flop_count : callable
        ``(inputs, on_gpu) -> count name`` for torch's own algorithm.
    yardstick : str or None
        The least-work count to quote beside (``"potri"`` for inverses).
    plus_count : str or None
        A count every method of the op also does (``"potrf"`` for A → A⁻¹).
    hermitian_result : bool
        The result is a Hermitian matrix (report its asymmetry).
    methods : dict
        ``name -> Method`` for sweeps.
    default_methods : dict
        ``"cuda"`` / ``"cpu"`` -> tuple of method names a sweep runs when none are named.
    """

    name: str
    summary: str
    torch_name: str
    torch_call: Callable
    matrix: str
    has_rhs: bool
    dispatch: tuple
    cpu_calls: tuple
    cpu_replay: Callable | None
    check_name: str
    check: Callable
    flop_count: Callable
    reports_info: bool = False
    fails_on_info: bool = False
    yardstick: str | None = None
    plus_count: str | None = None
    hermitian_result: bool = False
    methods: dict = field(default_factory=dict)
    default_methods: dict = field(default_factory=dict)

    @property
    def replayable(self) -> bool:
        """The op has a dispatch table and a CPU replay (``compare`` can run it)."""
        return bool(self.dispatch) and self.cpu_replay is not None

    def method(self, name: str) -> Method:
        """The sweep method ``name``.

        Raises
        ------
        OpError
            The op has no such method.
        """
        try:
            return self.methods[name]
        except KeyError:
            raise OpError(f"{self.name} has no method {name!r}; choose from "
                          f"{', '.join(self.methods)}") from None

    def require_replay(self) -> None:
        """Raise :class:`OpError` unless :attr:`replayable`."""
        if not self.replayable:
            raise OpError(f"op {self.name!r} has no replay of torch's library calls "
                          "(no dispatch table / CPU replay): compare cannot run it")

    def torch_path(self, *, batch: int, n: int, nrhs: int | None = None, dtype="float64",
                   device: str = "cuda", torch_version=None, preferred: str | None = None
                   ) -> TorchPath:
        """Which library calls torch makes for this op on inputs of this shape.

        Parameters
        ----------
        batch : int
            Number of matrices (product of the batch dimensions).
        n, nrhs : int
            Matrix order; right-hand sides (ops with B; default n).
        dtype : str or dtype
        device : str
            ``"cuda"`` or ``"cpu"`` (a device string such as ``"cuda:1"`` works too).
        torch_version : str, optional
            Default: the installed torch.
        preferred : {"default", "cusolver", "magma"}, optional
            ``torch.backends.cuda.preferred_linalg_library()``; None reads it.

        Returns
        -------
        TorchPath

        Raises
        ------
        OpError
            The op has no dispatch table, or no row matches.
        ValueError
            batch, n or nrhs not an int >= 0; a device other than cuda / cpu; an unknown
            ``preferred``.
        TypeError
            Unsupported dtype.
        """
        from .._dtypes import dtype_info

        self.require_replay()
        for what, v in (("batch", batch), ("n", n), ("nrhs", 0 if nrhs is None else nrhs)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{what} must be an int >= 0, got {v!r}")
        if str(device).split(":")[0] not in ("cuda", "cpu"):
            raise ValueError(f"device must be 'cuda' or 'cpu' (or 'cuda:N'), got {device!r}")
        check_preferred(preferred)
        t = dtype_info(dtype).prefix

        def fmt(calls):
            return tuple(c.format(t=t, T=t.upper()) for c in calls)

        if str(device).split(":")[0] == "cpu":
            return TorchPath(self.name, "lapack", fmt(self.cpu_calls), self.cpu_replay.__name__,
                             False, "CPU", "torch's bundled LAPACK vs scipy's LAPACK: agreement "
                             "is judged by tolerance (equal bits only by chance)")
        import torch

        ver = parse_version(torch_version or torch.__version__)
        preferred = (preferred or current_preference()).lower()
        k = n if nrhs is None else nrhs
        for row in self.dispatch:
            if row.when.matches(ver, batch, n, k, preferred):
                note = ""
                if row.backend == "magma":
                    note = ("torch runs MAGMA here, which cusolver-trace does not call: the replay "
                            "runs the cuSOLVER path as a reference and agreement is judged by "
                            "tolerance")
                elif preferred == "magma" and self.dispatch[0].backend == "cusolver" and all(
                        r.backend == "cusolver" for r in self.dispatch):
                    note = f"{self.torch_name} always uses cuSOLVER in these torch versions"
                return TorchPath(self.name, row.backend, fmt(row.calls), row.replay.__name__,
                                 row.bitwise, f"torch {ver[0]}.{ver[1]}: {row.rule}", note)
        raise OpError(f"no dispatch rule for {self.name} batch={batch} n={n} torch {ver}")

    def run_replay(self, inputs: Inputs, upper: bool = False, path: TorchPath | None = None,
                   **path_kw):
        """Run torch's library calls for this op on ``inputs`` through the backends.

        Returns ``(result, info, path)``: the result as torch returns it, ``info`` an int32
        tensor (one per matrix). Nothing is checked or synchronized.
        """
        return self.replay_call(inputs, upper, path, **path_kw)()

    def replay_call(self, inputs: Inputs, upper: bool = False, path: TorchPath | None = None,
                    **path_kw):
        """:meth:`run_replay` as a zero-argument callable, its decisions taken once: which
        replay runs (path, empty input, CPU), so that a timing loop calling it many times
        pays only the replay itself. Each call returns ``(result, info, path)``.
        """
        if path is None:
            path = self.torch_path(batch=inputs.batch, n=inputs.n, nrhs=inputs.nrhs,
                                   dtype=inputs.x.dtype, device=inputs.x.device.type, **path_kw)
        import torch

        if inputs.n == 0 or inputs.batch == 0 or (inputs.B is not None and inputs.B.shape[-1] == 0):
            # empty: the result torch returns, without calling a library routine (cuSOLVER and
            # LAPACK reject lda = 0)
            shape = tuple(inputs.B.shape) if self.has_rhs else tuple(inputs.x.shape)
            dev = inputs.x.device

            def empty():
                return (torch.zeros(shape, dtype=inputs.x.dtype, device=dev),
                        torch.zeros(inputs.batch, dtype=torch.int32, device=dev), path)
            return empty
        if not inputs.on_cuda:
            def on_cpu():
                out, info = self.cpu_replay(inputs, upper)
                return (torch.from_numpy(np.ascontiguousarray(out)),
                        torch.from_numpy(np.asarray(info, dtype=np.int32)), path)
            return on_cpu
        for row in self.dispatch:
            if row.replay.__name__ == path.replay:
                replay = row.replay

                def on_cuda():
                    out, info = replay(inputs, upper)
                    return out, info, path
                return on_cuda
        raise OpError(f"{self.name}: no replay named {path.replay!r}")


_REGISTRY: dict[str, Op] = {}
_BUILTIN = ("cholesky", "cholesky_inverse", "cholesky_solve", "spd_inverse")
_loaded = False


def _load_builtin() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for mod in _BUILTIN:
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
    if op.matrix not in ("A", "factor"):
        raise OpError(f"{op.name}: matrix must be 'A' or 'factor', got {op.matrix!r}")
    for name, m in op.methods.items():
        if name != m.name:
            raise OpError(f"{op.name}: method key {name!r} names method {m.name!r}")
    for dev, default in op.default_methods.items():
        missing = [m for m in default if m not in op.methods]
        if missing:
            raise OpError(f"{op.name}: default methods {missing} for {dev} are not in its methods")
    _REGISTRY[op.name] = op
    return op


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


def prepare_inputs(op: Op, A=None, B=None, *, factor=None, upper: bool = False, nrhs: int = 1,
                   seed: int = 0) -> Inputs:
    """Build the :class:`Inputs` of ``op`` from A (and B, or a given factor).

    Parameters
    ----------
    op : Op
    A : torch.Tensor (..., n, n), optional
        Hermitian positive definite. For ops on the factor, the factor is
        ``torch.linalg.cholesky_ex(A, upper=upper)``; a failure there is noted
        (``factor_failed``) and the partial factor is used.
    B : torch.Tensor (..., n, nrhs), optional
        Right-hand sides (default: ``nrhs`` columns of seeded standard normal values).
    factor : torch.Tensor (..., n, n), optional
        Use this factor as given (e.g. a singular one); A defaults to L·Lᴴ (Uᴴ·U) of its
        ``upper`` / lower triangle.
    upper : bool
    nrhs : int
    seed : int

    Returns
    -------
    Inputs

    Raises
    ------
    OpError
        ``factor=`` for an op that takes A.
    ValueError
        Neither A nor factor; shapes that do not fit.
    """
    import torch

    if factor is not None:
        if op.matrix != "factor":
            raise OpError(f"factor= is for ops on a Cholesky factor; {op.name} takes A")
        if factor.ndim < 2 or factor.shape[-1] != factor.shape[-2]:
            raise ValueError(f"factor must have shape (..., n, n), got {tuple(factor.shape)}")
        F = factor.triu() if upper else factor.tril()
        if A is None:
            A = F.mH @ F if upper else F @ F.mH
    if A is None:
        raise ValueError("need A (or factor= for an op on the Cholesky factor)")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A must have shape (..., n, n), got {tuple(A.shape)}")
    inp = Inputs(A, A)
    if op.matrix == "factor":
        if factor is not None:
            if tuple(factor.shape) != tuple(A.shape):
                raise ValueError(f"factor {tuple(factor.shape)} and A {tuple(A.shape)} differ in shape")
            inp.x = factor
        else:
            inp.x, finfo = torch.linalg.cholesky_ex(A, upper=upper)
            if bool((finfo != 0).any()):
                inp.factor_failed = True
                inp.notes.append(
                    "torch.linalg.cholesky of A failed (A is not positive definite); the partial "
                    "factor is handed to both sides, so neither result refers to A and the "
                    "ratios do not apply")
    if op.has_rhs:
        n, batch_shape = A.shape[-1], tuple(A.shape[:-2])
        if B is None:
            if nrhs < 0:
                raise ValueError(f"nrhs must be >= 0, got {nrhs}")
            g = torch.Generator().manual_seed(seed + 1)
            B = torch.randn(*batch_shape, n, nrhs, generator=g, dtype=torch.float64)
            B = B.to(A.dtype).to(A.device)
        if B.ndim < 2 or B.shape[-2] != n or tuple(B.shape[:-2]) != batch_shape:
            raise ValueError(f"B must have shape (..., n, nrhs) with A's batch shape {batch_shape} "
                             f"and n = {n}, got {tuple(B.shape)}")
        if B.dtype != A.dtype or B.device != A.device:
            raise ValueError(f"B ({B.dtype}, {B.device}) must match A ({A.dtype}, {A.device})")
        inp.B = B
    elif B is not None:
        raise OpError(f"{op.name} takes no right-hand sides B")
    return inp


# --------------------------------------------------------------------------- methods every op has
def _torch_make(op, inputs, upper, check):
    return lambda: op.torch_call(inputs, upper)[0]


def _torch_cusolver_make(op, inputs, upper, check):
    def run():
        with preferred_library("cusolver"):
            return op.torch_call(inputs, upper)[0]
    return run


def _replay_make(op, inputs, upper, check):
    call = op.replay_call(inputs, upper)   # decided once, outside the timing loop, as compare does
    return lambda: call()[0]


TORCH = Method("torch", _torch_make)
"""torch's own call (``linalg.cholesky_ex`` for the factorization: no host sync is timed)."""
TORCH_CUSOLVER = Method("torch_cusolver", _torch_cusolver_make, gpu_only=True)
"""torch's call under ``preferred_linalg_library("cusolver")``."""
REPLAY = Method("replay", _replay_make)
"""The exact library calls torch makes (the op's dispatch table)."""
