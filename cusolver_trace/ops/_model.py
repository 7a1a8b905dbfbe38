"""The op model: what one torch op is to the tools (:class:`Op`), its options, inputs,
dispatch rows and sweep methods.

Nothing here imports torch at import time (the command line builds its parser from the
registry: ``--help`` stays fast), and nothing here names a factorization: an op module
fills these types in with everything that is specific to it.
"""
from __future__ import annotations

import contextlib
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Callable, Mapping

import numpy as np

from ._options import Option, Options, bool_option  # noqa: F401  (re-exported)

#: The backend preferences a comparison can ask for (torch's ``preferred_linalg_library``).
PREFERENCES = (None, "default", "cusolver", "magma")


class OpError(ValueError):
    """An unknown op, or an op that lacks what a tool asked of it."""


def check_preferred(preferred) -> None:
    """Raise ``ValueError`` unless ``preferred`` is one of :data:`PREFERENCES` (the one
    check, for :meth:`Op.torch_path` and :func:`cusolver_trace.compare.compare`)."""
    if preferred not in PREFERENCES:
        raise ValueError(f"preferred must be 'default', 'cusolver' or 'magma', got {preferred!r}")


def parse_version(v) -> tuple[int, int]:
    """``"2.11.0+cu130"`` → ``(2, 11)``.

    Raises
    ------
    ValueError
        Not a version string.

    Examples
    --------
    >>> parse_version("2.11.0+cu130")
    (2, 11)
    """
    m = re.match(r"(\d+)\.(\d+)", str(v))
    if not m:
        raise ValueError(f"cannot parse torch version {v!r}")
    return int(m.group(1)), int(m.group(2))


ANY = ((0, 0), (99, 99))
UP_TO_2_11 = ((0, 0), (2, 11))
FROM_2_12 = ((2, 12), (99, 99))
UP_TO_2_12 = ((0, 0), (2, 12))
FROM_2_13 = ((2, 13), (99, 99))


# --------------------------------------------------------------------------- the shape of a call
@dataclass(frozen=True)
class Point:
    """What a dispatch rule looks at: one call's shape, dtype, options, torch version and
    backend preference.

    ``batch`` counts the matrices of the op's matrix argument; ``nrhs`` and ``rhs_batch``
    those of its right-hand sides (None without them).
    """

    version: tuple
    batch: int
    n: int
    nrhs: int | None
    dtype: str
    preferred: str
    options: Mapping = field(default_factory=dict)
    rhs_batch: int | None = None


@dataclass(frozen=True)
class When:
    """Conditions of a dispatch row; all must hold (bounds inclusive, None = any).

    Attributes
    ----------
    torch : ((major, minor), (major, minor))
        Range of torch versions.
    batch_min, batch_max : int
        Number of matrices (product of the batch dimensions).
    n_min, n_max : int
        Matrix order.
    nrhs_min, nrhs_max : int
        Right-hand sides (ops with a B).
    preferred : tuple of str or None
        Values of ``torch.backends.cuda.preferred_linalg_library()`` (lower case).
    dtypes : tuple of str or None
        dtype names.
    options : mapping or None
        Option values that must hold (``{"adjoint": False}``).
    test : callable or None
        ``(point: Point) -> bool``, for a condition the bounds cannot say (torch's size
        formulas); ``text`` says it in words.
    text : str
        The ``test`` in words, for reports.
    """

    torch: tuple = ANY
    batch_min: int = 1
    batch_max: int | None = None
    n_min: int = 0
    n_max: int | None = None
    nrhs_min: int = 0
    nrhs_max: int | None = None
    preferred: tuple | None = None
    dtypes: tuple | None = None
    options: Mapping | None = None
    test: Callable | None = None
    text: str = ""

    def matches(self, p: Point) -> bool:
        lo, hi = self.torch
        k = p.n if p.nrhs is None else p.nrhs
        return (lo <= tuple(p.version) <= hi
                and self.batch_min <= p.batch and (self.batch_max is None or p.batch <= self.batch_max)
                and self.n_min <= p.n and (self.n_max is None or p.n <= self.n_max)
                and self.nrhs_min <= k and (self.nrhs_max is None or k <= self.nrhs_max)
                and (self.preferred is None or p.preferred in self.preferred)
                and (self.dtypes is None or p.dtype in self.dtypes)
                and (self.options is None
                     or all(p.options.get(k) == v for k, v in self.options.items()))
                and (self.test is None or bool(self.test(p))))


@dataclass(frozen=True)
class DispatchRule:
    """One row of an op's dispatch table: when torch makes which library calls.

    Attributes
    ----------
    when : When
        The conditions.
    backend : str
        ``"cusolver"``, ``"cublas"``, ``"magma"`` or ``"lapack"`` (torch copies to the CPU).
    calls : tuple of str
        The library routines, in order (``{t}`` / ``{T}`` = type letter).
    replay : callable
        ``(inputs: Inputs, opts: Options) -> (result, info)`` running the same calls on CUDA
        (where torch runs MAGMA, which this project does not call: the cuSOLVER path as a
        reference, with ``bitwise=False``).
    bitwise : bool
        The replay runs the same routines: bit-for-bit agreement is expected.
    rule : str
        The condition in words, for reports.
    note : str
        What a reader should know about this path (default: a note for MAGMA paths).
    """

    when: When
    backend: str
    calls: tuple
    replay: Callable
    bitwise: bool
    rule: str
    note: str = ""


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


# --------------------------------------------------------------------------- inputs
@dataclass
class Inputs:
    """The inputs of one op call, on one device.

    Attributes
    ----------
    A : torch.Tensor (..., n, n)
        The matrix the accuracy checks refer to.
    x : torch.Tensor (..., n, n)
        The op's matrix argument: A itself, or a factorization of A.
    B : torch.Tensor (..., n, nrhs) or None
        Right-hand sides, for ops that take them.
    pivots : torch.Tensor (..., n) int32 or None
        A factorization's pivots, for ops that take them.
    notes : list of str
        What a reader should know about these inputs (e.g. factoring A failed).
    factor_failed : bool
        Factoring A failed, so x is a partial factor (ratios do not apply).
    """

    A: object
    x: object
    B: object = None
    pivots: object = None
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
        return math.prod(self.batch_shape)

    @property
    def nrhs(self) -> int | None:
        return None if self.B is None else self.B.shape[-1]

    @property
    def on_cuda(self) -> bool:
        return self.x.device.type == "cuda"

    def tensors(self) -> dict:
        """The tensors given, by field name (None left out)."""
        return {k: v for k, v in (("A", self.A), ("x", self.x), ("B", self.B),
                                  ("pivots", self.pivots)) if v is not None}

    def to(self, device) -> "Inputs":
        """A copy with every tensor on ``device``."""
        moved = {k: v.to(device) for k, v in self.tensors().items()}
        return Inputs(moved.get("A"), moved.get("x"), moved.get("B"), moved.get("pivots"),
                      list(self.notes), self.factor_failed)

    def members(self, index) -> "Inputs":
        """The batch members ``index`` (indices into the flattened batch) as a batch of their
        own (every tensor's batch dimensions flattened first)."""
        def pick(t):
            if t is None:
                return None
            keep = 1 if t is self.pivots else 2
            return t.reshape(-1, *t.shape[t.dim() - keep:])[index]
        return Inputs(pick(self.A), pick(self.x), pick(self.B), pick(self.pivots),
                      list(self.notes), self.factor_failed)


def on_A(op_name: str):
    """``make_inputs`` of an op on A itself (general or Hermitian); refuses anything handed
    over."""
    def make(A, given, opts):
        if given:
            raise OpError(f"{op_name} takes A itself, not {', '.join(given)}=")
        if A is None:
            raise ValueError("need A")
        return Inputs(A, A)
    return make


def host(t):
    """A CPU tensor's values as a NumPy array for LAPACK (conjugate / negative bits resolved)."""
    return t.detach().resolve_conj().resolve_neg().numpy()


def lazy_backend(name: str):
    """A function returning :mod:`cusolver_trace.backends.<name>`, imported on its first call
    (a CUDA backend loads CuPy / nvmath, which listing the ops must not)."""
    found: list = []

    def get():
        if not found:
            import importlib

            found.append(importlib.import_module(f"cusolver_trace.backends.{name}"))
        return found[0]
    get.__doc__ = f":mod:`cusolver_trace.backends.{name}`, imported on first use."
    return get


def member_count(t, keep: int = 2) -> int:
    """Matrices (``keep`` = 2) or vectors (1) in ``t``'s batch."""
    return math.prod(t.shape[: t.dim() - keep])


# --------------------------------------------------------------------------- sweep methods
@dataclass(frozen=True)
class Method:
    """One way a sweep can compute an op's result.

    Attributes
    ----------
    name : str
    make : callable
        ``(op: Op, inputs: Inputs, opts: Options, check: bool) -> zero-argument callable``
        returning the result without synchronizing unless ``check`` asks for it.
    gpu_only : bool
    checkable : bool
        ``make`` honours ``check`` (a public entry point with checks); the sweep can time an
        unchecked twin beside it.
    flop_count : callable or None
        ``(inputs, on_gpu) -> count name`` (:func:`cusolver_trace.checks.flops`); None: the op's.
    resolve : callable or None
        ``(inputs) -> str``: what the method runs (``auto`` resolved); None: itself.
    workspace : callable or None
        ``(inputs) -> float or None``: the stated workspace (n² beyond the inputs,
        :attr:`cusolver_trace.routines.Impl.workspace`) of the routine row it runs; None:
        the method runs no routine row.
    """

    name: str
    make: Callable
    gpu_only: bool = False
    checkable: bool = False
    flop_count: Callable | None = None
    resolve: Callable | None = None
    workspace: Callable | None = None

    def resolved(self, inputs) -> str:
        return self.resolve(inputs) if self.resolve is not None else self.name

    def stated_workspace(self, inputs) -> float | None:
        """The workspace the routine row it runs states (None: not stated, or no row)."""
        return self.workspace(inputs) if self.workspace is not None else None


class LazyMethods(Mapping):
    """An op's methods built on first use by ``factory() -> dict`` (the methods of an
    implementation table import the array routines, which listing the ops must not)."""

    def __init__(self, factory: Callable):
        self._factory, self._methods = factory, None

    def _load(self) -> dict:
        if self._methods is None:
            self._methods = dict(self._factory())
        return self._methods

    def __getitem__(self, k):
        return self._load()[k]

    def __iter__(self):
        return iter(self._load())

    def __len__(self):
        return len(self._load())

    def __repr__(self):
        return f"LazyMethods({'loaded' if self._methods is not None else 'not loaded'})"


# --------------------------------------------------------------------------- the op
@dataclass(frozen=True)
class Op:
    """Everything the tools need about one torch op; an op module fills it in.

    Attributes
    ----------
    name : str
        The registry key (``--op`` on the command line).
    summary : str
        One line for ``--help``.
    torch_name : str
        The torch function as the reports name it.
    options : tuple of Option
        The op's keywords (``upper``; ``left``, ``adjoint``; ``pivot``); every callable below
        receives them as one :class:`Options`.
    structure : {"hpd", "general", "hermitian"}
        What the matrix the inputs are made from is: Hermitian positive definite, a
        general square matrix, or Hermitian (indefinite in general; the eigensolvers read
        one triangle), :data:`cusolver_trace.matrices.STRUCTURES`.
    make_inputs : callable
        ``(A, B, given: dict, opts, nrhs: int, seed: int) -> Inputs`` from a matrix A of
        :attr:`structure` (``given``: inputs handed over as they are, by name, e.g.
        ``{"factor": L}``; raise :class:`OpError` for a name the op does not take).
    torch_call : callable
        ``(inputs, opts) -> (result, info or None)``; ``result`` a tensor or a tuple of them.
    takes : tuple of str
        What a caller may hand over (``compare(op, A, B, factor=…, pivots=…)``): ``"A"``
        always, ``"B"`` for ops with right-hand sides, and the names :attr:`make_inputs`
        accepts in ``given``.
    outputs : tuple of str
        The names of the result's parts (``("LU", "pivots")``); the first is the one whose
        differences are reported.
    rhs_shape : callable or None
        ``(n, nrhs, opts) -> (rows, columns)`` of each right-hand side matrix; None:
        ``(n, nrhs)`` (``(nrhs, n)`` for a solve from the right, X·A = B).
    empty_result : callable or None
        ``(inputs, opts) -> (result, info)`` for an empty input (n = 0, batch 0, nrhs 0):
        what torch returns, made without a library call (cuSOLVER and LAPACK reject
        lda = 0). None: zeros shaped like B (ops with right-hand sides) or x.
    dispatch : tuple of DispatchRule
        CUDA paths; rows tried in order, the first match wins. Empty: no replay.
    cpu_calls : tuple of str
        The LAPACK calls torch's CPU path makes.
    cpu_replay : callable or None
        ``(inputs, opts) -> (result, info)`` through scipy's LAPACK (arrays or tensors).
    check_name : str
        The LAPACK test ratio (``"pot01"``, ``"get02"``).
    check : callable
        ``(inputs, result, opts) -> BatchMax`` (< 30 passes); it reads only what the op reads.
    reads : callable
        ``(inputs, opts) -> tuple of tensors``: what the op reads of its inputs (a triangle,
        a whole matrix, the right-hand sides); non-finite values there leave the result
        unspecified.
    flop_count : callable
        ``(inputs, on_gpu) -> count name`` for torch's own algorithm.
    reports_info : bool
        torch's call returns ``info`` (e.g. ``linalg.cholesky_ex``).
    fails_on_info : bool
        ``info > 0`` is a failure of the matrix (not positive definite, singular): a failing
        verdict compares info only on those matrices.
    failure_text : callable
        ``(k: int) -> str``: what ``info = k > 0`` means, in words.
    near_failure : callable or None
        ``(inputs, result, member: int, k: int) -> bool``: whether the result of batch member
        ``member``, which did not fail, is at the rounding level of failing at ``k`` (two
        libraries may then disagree about the failure: the pivot rule). None: never.
    nonfinite_note : str
        Said beside non-finite outputs (which routines return them silently).
    yardstick : str or None
        The least-work count to quote beside (``"potri"`` for inverses).
    plus_count : str or None
        A count every method of the op also does (``"potrf"`` for A → A⁻¹).
    hermitian_result : bool
        The result is a Hermitian matrix (report its asymmetry).
    parts_agreement : callable or None
        ``(inputs, torch_result, replay_result, opts) -> str``: a note on how far the parts
        that two different routines may return differently agree (eigenvectors after their
        signs / phases are normalized, subspaces for clustered eigenvalues); called where the
        results are not bitwise equal. None: no such note.
    methods : dict or callable
        ``name -> Method`` for sweeps; a callable returning that dict is called on first use
        (:class:`LazyMethods`).
    default_methods : dict
        ``"cuda"`` / ``"cpu"`` -> tuple of method names a sweep runs when none are named.
    """

    name: str
    summary: str
    torch_name: str
    options: tuple
    structure: str
    make_inputs: Callable
    torch_call: Callable
    dispatch: tuple
    cpu_calls: tuple
    cpu_replay: Callable | None
    check_name: str
    check: Callable
    reads: Callable
    flop_count: Callable
    takes: tuple = ("A",)
    outputs: tuple = ("result",)
    rhs_shape: Callable | None = None
    empty_result: Callable | None = None
    reports_info: bool = False
    fails_on_info: bool = False
    failure_text: Callable = field(default=lambda k: f"info = {k}")
    near_failure: Callable | None = None
    nonfinite_note: str = ""
    yardstick: str | None = None
    plus_count: str | None = None
    hermitian_result: bool = False
    parts_agreement: Callable | None = None
    methods: dict = field(default_factory=dict)
    default_methods: dict = field(default_factory=dict)

    def __post_init__(self):
        if callable(self.methods) and not isinstance(self.methods, Mapping):
            object.__setattr__(self, "methods", LazyMethods(self.methods))

    # -- options -----------------------------------------------------------------------
    def option(self, name: str) -> Option:
        """The option ``name``.

        Raises
        ------
        TypeError
            The op takes no such option.
        """
        for o in self.options:
            if o.name == name:
                return o
        raise TypeError(f"{self.name} takes no option {name!r}"
                        + (f" (its options: {', '.join(o.name for o in self.options)})"
                           if self.options else " (it has no options)"))

    def options_from(self, **given) -> Options:
        """The :class:`Options` of one call: ``given`` validated, the others torch's defaults.

        Raises
        ------
        TypeError
            An option the op does not take, or a value of the wrong type.
        ValueError
            A value the option does not take.
        """
        values = {o.name: o.default for o in self.options}
        for k, v in given.items():
            values[k] = self.option(k).validate(v, self.name)
        return Options(values)

    @property
    def has_rhs(self) -> bool:
        """The op takes right-hand sides (its inputs have a B)."""
        return "B" in self.takes

    def rhs_dims(self, n: int, nrhs: int, opts) -> tuple:
        """``(rows, columns)`` of each right-hand side matrix for ``nrhs`` of them."""
        return self.rhs_shape(n, nrhs, opts) if self.rhs_shape else (n, nrhs)

    def nrhs_of(self, inputs: Inputs, opts) -> int | None:
        """How many right-hand sides ``inputs`` hold (None without B)."""
        if inputs.B is None:
            return None
        rows, _ = self.rhs_dims(inputs.n, -1, opts)
        return inputs.B.shape[-2] if rows == -1 else inputs.B.shape[-1]

    # -- replay ------------------------------------------------------------------------
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
            from . import names

            raise OpError(f"op {self.name!r} has no replay of torch's library calls "
                          "(no dispatch table / CPU replay): compare cannot run it; it runs "
                          + ", ".join(names(replayable=True)))

    def torch_path(self, *, batch: int, n: int, nrhs: int | None = None, dtype="float64",
                   device: str = "cuda", torch_version=None, preferred: str | None = None,
                   options=None, rhs_batch: int | None = None) -> TorchPath:
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
        options : mapping, optional
            The op's options (:meth:`options_from`); default torch's defaults.
        rhs_batch : int, optional
            Matrices in B's batch (default ``batch``).

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
            Unsupported dtype; an option the op does not take.
        """
        from .._dtypes import dtype_info

        self.require_replay()
        for what, v in (("batch", batch), ("n", n), ("nrhs", 0 if nrhs is None else nrhs)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{what} must be an int >= 0, got {v!r}")
        if str(device).split(":")[0] not in ("cuda", "cpu"):
            raise ValueError(f"device must be 'cuda' or 'cpu' (or 'cuda:N'), got {device!r}")
        check_preferred(preferred)
        opts = options if isinstance(options, Options) else self.options_from(**(options or {}))
        info = dtype_info(dtype)
        t = info.prefix

        def fmt(calls):
            return tuple(c.format(t=t, T=t.upper()) for c in calls)

        if str(device).split(":")[0] == "cpu":
            return TorchPath(self.name, "lapack", fmt(self.cpu_calls), self.cpu_replay.__name__,
                             False, "CPU", "torch's bundled LAPACK vs scipy's LAPACK: agreement "
                             "is judged by tolerance (equal bits only by chance)")
        if torch_version is None:
            import torch

            torch_version = torch.__version__
        ver = parse_version(torch_version)
        preferred = (preferred or current_preference()).lower()
        p = Point(ver, int(batch), int(n), None if nrhs is None else int(nrhs), info.name,
                  preferred, opts, int(batch if rhs_batch is None else rhs_batch))
        for row in self.dispatch:
            if row.when.matches(p):
                note = row.note
                if note:
                    pass
                elif row.backend == "magma":
                    note = ("torch runs MAGMA here, which cusolver-trace does not call: the replay "
                            "runs the cuSOLVER path as a reference and agreement is judged by "
                            "tolerance")
                elif preferred == "magma" and all(r.backend != "magma" for r in self.dispatch):
                    note = f"{self.torch_name} never uses MAGMA in these torch versions"
                return TorchPath(self.name, row.backend, fmt(row.calls), row.replay.__name__,
                                 row.bitwise, f"torch {ver[0]}.{ver[1]}: {row.rule}", note)
        raise OpError(f"no dispatch rule for {self.name} batch={batch} n={n} torch {ver}")

    def path_for(self, inputs: Inputs, opts, **path_kw) -> TorchPath:
        """:meth:`torch_path` for these inputs."""
        return self.torch_path(batch=inputs.batch, n=inputs.n, nrhs=self.nrhs_of(inputs, opts),
                               dtype=inputs.x.dtype, device=inputs.x.device.type,
                               options=opts,
                               rhs_batch=None if inputs.B is None else member_count(inputs.B),
                               **path_kw)

    def run_replay(self, inputs: Inputs, opts=None, path: TorchPath | None = None, **path_kw):
        """Run torch's library calls for this op on ``inputs`` through the backends.

        Returns ``(result, info, path)``: the result as torch returns it, ``info`` an int32
        tensor (one per matrix). Nothing is checked or synchronized.
        """
        return self.replay_call(inputs, opts, path, **path_kw)()

    def replay_call(self, inputs: Inputs, opts=None, path: TorchPath | None = None,
                    **path_kw):
        """:meth:`run_replay` as a zero-argument callable, its decisions taken once: which
        replay runs (path, empty input, CPU), so that a timing loop calling it many times
        pays only the replay itself. Each call returns ``(result, info, path)``.
        """
        opts = opts if isinstance(opts, Options) else self.options_from(**(opts or {}))
        if path is None:
            path = self.path_for(inputs, opts, **path_kw)
        if inputs.n == 0 or inputs.batch == 0 or inputs.nrhs == 0:
            make = self.empty_result or _zeros_like_result

            def empty():
                out, info = make(inputs, opts)
                return out, info, path
            return empty
        if not inputs.on_cuda:
            replay = self.cpu_replay

            def on_cpu():
                out, info = replay(inputs, opts)
                return _as_tensors(out), _as_tensors(info), path
            return on_cpu
        for row in self.dispatch:
            if row.replay.__name__ == path.replay:
                replay = row.replay

                def on_cuda():
                    out, info = replay(inputs, opts)
                    return out, info, path
                return on_cuda
        raise OpError(f"{self.name}: no replay named {path.replay!r}")


def _zeros_like_result(inputs: Inputs, opts):
    """The default empty result: zeros shaped like B (ops with right-hand sides) or x, and
    one zero info per matrix."""
    import torch

    like = inputs.B if inputs.B is not None else inputs.x
    return (torch.zeros(like.shape, dtype=like.dtype, device=like.device),
            torch.zeros(inputs.batch, dtype=torch.int32, device=like.device))


def _as_tensors(x):
    """NumPy results of a CPU replay as torch tensors (tuples kept as tuples)."""
    import torch

    if isinstance(x, tuple):
        return tuple(_as_tensors(v) for v in x)
    if isinstance(x, torch.Tensor):
        return x
    arr = np.asarray(x)
    if arr.dtype.kind == "i":
        arr = arr.astype(np.int32, copy=False)
    return torch.from_numpy(np.ascontiguousarray(arr))


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
