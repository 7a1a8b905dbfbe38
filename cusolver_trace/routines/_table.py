"""What every array routine shares: the implementation table (:class:`Impl` rows, devices
as columns, :class:`AutoRule` rows for ``"auto"``), the one ``info`` check, empty results
and the default device.

A public routine reads: validate its operands → resolve the method through its
:class:`Table` → run the row's CUDA or CPU column → check.
"""
from __future__ import annotations

import re

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

import numpy as np

from .._arrays import Operand, wrap
from .._dtypes import dtype_info
from ..errors import IllegalArgumentError, NotPositiveDefiniteError


def cuda():
    """:mod:`cusolver_trace.backends.cuda` (imported on first use: it loads CuPy / nvmath)."""
    from ..backends import cuda as backend

    return backend


def fused():
    """:mod:`cusolver_trace.backends.fused`, imported once (an import statement per call
    costs ~1 µs)."""
    if not _FUSED:
        from ..backends import fused as backend

        _FUSED.append(backend)
    return _FUSED[0]


_FUSED: list = []


def default_device() -> tuple[str, str | None]:
    """The one rule for where work runs when no device is named: ``("cuda:0", None)`` when
    torch sees a GPU and the CUDA backend can run, else ``("cpu", why)`` — ``why`` is None
    when there is simply no GPU, else the reason the CUDA backend cannot run (CuPy /
    nvmath-python missing).

    Examples
    --------
    >>> device, why = default_device()
    >>> device in ("cuda:0", "cpu")
    True
    """
    import torch

    if not torch.cuda.is_available():
        return "cpu", None
    why = cuda().available()
    return ("cpu", why) if why is not None else ("cuda:0", None)


# --------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Impl:
    """One row of an implementation table: one way of computing an operation.

    Attributes
    ----------
    name : str
        The ``method=`` value.
    summary : str
        What runs, in the field's terms.
    cuda : callable or None
        The CUDA column: ``(operands…, opts…) -> (result, info or None)`` on torch CUDA
        tensors, no checks, no synchronization. None: not on the GPU.
    cpu : callable or None
        The CPU column, on NumPy arrays. None: GPU only.
    flops : str
        The LAWN 41 count of its work (:func:`cusolver_trace.checks.flops`).
    mirrors : str
        The routine it mirrors, named in errors (``{T}`` / ``{t}`` = type letter).
    cpu_mirrors, cpu_flops : str
        The same for the CPU column (default: as on the GPU).
    cuda_checked : callable or None
        The CUDA column with ``check=True``'s check computed in its own kernel (returns the
        check record, None when nothing is to report; one synchronization). None: the check
        runs after the CUDA column.
    ready : callable or None
        ``(x, upper, check) -> bool`` on a call's torch CUDA operand: whether the row can
        serve this call now. False while what it needs is being prepared (a fused kernel
        being compiled, :func:`cusolver_trace.backends.fused.ready`): ``auto`` then runs the
        row of its next rule that is ready. None: always ready.
    workspace : float or None
        The CUDA column's peak device memory beyond its inputs, the result included, per
        matrix, in units of n² elements of the dtype (2.0: two n × n buffers); None: not
        stated. Stated for one float64 matrix (the case of the measurements: a buffer made
        once per call, such as an identity expanded over the batch, counts one n² here; a
        bool mask of n² bytes counts 1/8); rows with right-hand sides state the n × n part,
        the n × nrhs result adds nrhs/n. Library workspaces are included where their size is
        known. Each table's comment says which values were measured (``cusolver-trace
        sweep`` reports the peak beside the time, :func:`cusolver_trace.sweep.peak_extra`)
        and which are read from the code.
    """

    name: str
    summary: str
    cuda: Callable | None
    cpu: Callable | None
    flops: str
    mirrors: str
    cpu_mirrors: str = ""
    cpu_flops: str = ""
    cuda_checked: Callable | None = None
    workspace: float | None = None
    ready: Callable | None = None

    @property
    def gpu_only(self) -> bool:
        """True when the row has no CPU column."""
        return self.cpu is None

    def routine_name(self, dtype, on_gpu: bool) -> str:
        """The routine to name in errors for ``dtype`` on the GPU or the CPU."""
        p = dtype_info(dtype).prefix
        return (self.mirrors if on_gpu else self.cpu_mirrors or self.mirrors).format(
            T=p.upper(), t=p)

    def flops_name(self, on_gpu: bool) -> str:
        """The flop count of the column that runs on the GPU or the CPU."""
        return self.flops if on_gpu else self.cpu_flops or self.flops


@dataclass(frozen=True)
class AutoRule:
    """One rule of a table's ``auto``: the conditions (all must hold; bounds inclusive,
    None = any) and the row they pick.

    Raises
    ------
    ValueError
        ``method`` not a non-empty str, a device other than ``"cuda"`` / ``"cpu"`` / None,
        a bound that is not an int >= 0.
    TypeError
        ``dtypes`` not a tuple (or list) of supported dtypes (names, torch or NumPy dtypes;
        kept as names).

    Examples
    --------
    >>> AutoRule("potri", device="cpu").matches(8, 1, "float64", "cpu")
    True
    >>> AutoRule("fused", dtypes=("float32",)).dtypes
    ('float32',)
    """

    method: str
    device: str | None = None
    batch_min: int = 0
    batch_max: int | None = None
    n_min: int = 0
    n_max: int | None = None
    dtypes: tuple | None = None

    def __post_init__(self):
        if not isinstance(self.method, str) or not self.method or self.method == "auto":
            raise ValueError(f"AutoRule: method must be the name of a table row, got "
                             f"{self.method!r}")
        if self.device not in (None, "cuda", "cpu"):
            raise ValueError(f"AutoRule: device must be 'cuda', 'cpu' or None, got {self.device!r}")
        for what in ("batch_min", "batch_max", "n_min", "n_max"):
            v = getattr(self, what)
            if v is None and what.endswith("_max"):
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"AutoRule: {what} must be an int >= 0, got {v!r}")
        if self.dtypes is not None:
            if not isinstance(self.dtypes, (tuple, list)):
                raise TypeError(f"AutoRule: dtypes must be a tuple of dtype names, got "
                                f"{self.dtypes!r}")
            object.__setattr__(self, "dtypes", tuple(dtype_info(d).name for d in self.dtypes))

    def matches(self, n: int, batch: int, dtype: str, device: str) -> bool:
        """Whether the rule holds for ``batch`` matrices of order ``n``."""
        return ((self.device is None or self.device == device)
                and self.batch_min <= batch and (self.batch_max is None or batch <= self.batch_max)
                and self.n_min <= n and (self.n_max is None or n <= self.n_max)
                and (self.dtypes is None or dtype in self.dtypes))


class Table:
    """The implementation table of one operation: its rows, and ``auto`` as a rule over them.

    Parameters
    ----------
    operation : str
        The routine's name (``"cholesky_inverse"``), for messages.
    rows : dict of str to Impl
        The methods, in order (a plain dict: tests may replace a row).
    auto : mapping of str to AutoRule
        Which row ``method="auto"`` runs: the first rule whose conditions all hold wins,
        and for a call (:meth:`resolve`'s ``call``) the first such rule whose row is ready
        for it (:attr:`Impl.ready`). Assign a new mapping to :attr:`auto` to try other
        rules; it is checked when used.
    can_run : callable, optional
        ``(method, n, dtype) -> bool``: whether ``auto`` may pick a row here (a row whose
        extra is missing, or whose kernel does not fit, is passed over: ``auto`` falls
        through to the next rule); ``token()`` is remembered with each memo entry.
    token : callable, optional
        ``() -> object``: what ``can_run``'s answers depend on (compared by identity).
    auto_from : Table, optional
        Take ``auto`` from this table (whose rows this table's rows include by name).
    """

    def __init__(self, operation: str, rows: dict, auto: Mapping, *,
                 can_run: Callable | None = None, token: Callable | None = None,
                 auto_from: "Table | None" = None):
        self.operation = operation
        self.rows = rows
        self.auto = MappingProxyType(dict(auto))
        self.auto_from = auto_from
        self._can_run = can_run
        self._token = token
        self._memo: dict = {}

    @property
    def names(self) -> tuple:
        """Every ``method=`` value: the rows, then ``"auto"``."""
        return (*self.rows, "auto")

    def row(self, name: str) -> Impl:
        """The row ``name``.

        Raises
        ------
        ValueError
            No such row.
        """
        try:
            return self.rows[name]
        except (KeyError, TypeError):
            raise ValueError(f"method must be one of {', '.join(self.names)}, got {name!r}") from None

    def _auto(self, n: int, batch: int, dtype: str, dev: str) -> tuple:
        """The rows of every rule that holds for the shape and can run, in the rules' order
        (the first is ``auto``'s choice, the others its fallbacks while a row is not ready),
        remembered per shape (walking the rules costs about 6 µs of a call's host time): a
        memo entry holds while the rules (compared as a tuple, element by element: the same
        rule objects short-circuit) and ``token()`` are those it was made with, so a replaced
        or edited rule set is seen. Readiness is a property of each call, asked outside the
        memo (:meth:`resolve`)."""
        token = self._token() if self._token is not None else None
        key = (n, batch, dtype, dev)
        try:
            rules = tuple(self.auto.values())
        except AttributeError:
            raise TypeError(f"{self.operation}: auto must be a mapping of names to AutoRule, "
                            f"got {type(self.auto).__name__}") from None
        hit = self._memo.get(key)
        if hit is not None and hit[1] == rules and hit[2] is token:
            return hit[0]
        bad = [r for r in rules if not isinstance(r, AutoRule)]
        if bad:
            raise TypeError(f"{self.operation}: auto's values must be AutoRule, got {bad[0]!r}")
        unknown = [r.method for r in rules if r.method not in self.rows]
        if unknown:
            raise ValueError(f"{self.operation}: auto names {unknown[0]!r}, which is not one of "
                             f"its methods ({', '.join(self.rows)})")
        chain = tuple(dict.fromkeys(
            rule.method for rule in rules if rule.matches(n, batch, dtype, dev) and (
                self._can_run is None or self._can_run(rule.method, n, dtype))))
        if not chain:
            raise LookupError(f"{self.operation}: auto has no rule for n={n} batch={batch} "
                              f"{dtype} on {dev}")
        if len(self._memo) >= 4096:   # many distinct shapes: start over rather than grow
            self._memo.clear()
        self._memo[key] = (chain, rules, token)
        return chain

    def _ready(self, chain: tuple, call: tuple) -> str:
        """The first row of ``chain`` ready for ``call`` (:attr:`Impl.ready`); the first row
        when none is (no rule to fall back on: the call waits for it)."""
        for method in chain:
            ready = self.rows[method].ready
            if ready is None or ready(*call):
                return method
        return chain[0]

    def _fitting(self, method: str, n: int, batch: int, dtype: str, device: str) -> str:
        """``method``, or the ``"torch"`` row where ``method`` states more workspace than
        torch's (:attr:`Impl.workspace`) and that workspace does not fit in the device's
        free memory (:func:`free_device_bytes`; asked only when the extra need is at least
        :data:`FIT_CHECK_BYTES`): ``auto`` never raises an out-of-memory error that torch's
        own path would not have raised."""
        row, base = self.rows[method], self.rows.get("torch")
        if (base is None or row.workspace is None or base.workspace is None
                or row.workspace <= base.workspace):
            return method
        need = row.workspace * n * n * dtype_info(dtype).itemsize * max(int(batch), 1)
        if (row.workspace - base.workspace) * need / row.workspace < FIT_CHECK_BYTES:
            return method
        free = free_device_bytes(device)
        return method if free is None or need <= free else "torch"

    def resolve(self, method: str, n: int, batch: int = 1, dtype="float64",
                device="cuda", call: tuple | None = None) -> str:
        """The row that runs for ``method`` on ``batch`` matrices of order ``n``.

        Parameters
        ----------
        method : str
            One of :attr:`names`; ``"auto"`` is resolved by :attr:`auto`, then, on CUDA,
            becomes torch's row where the row picked states more workspace than torch's and
            that does not fit in the device's free memory (:meth:`_fitting`).
        n, batch : int
            Matrix order and number of matrices.
        dtype : str or dtype
            float32, float64, complex64, complex128.
        device : str
            ``"cuda"`` / ``"cpu"`` (or a device string such as ``"cuda:1"``: the device
            whose free memory counts).
        call : tuple, optional
            ``(x, upper, check)`` of the call being resolved (x: its torch CUDA operand):
            ``auto`` then runs the row of the first matching rule that is ready for it
            (:attr:`Impl.ready`), and may start preparing the others (a fused kernel's
            build). Without it, ``auto`` answers from the rules alone.

        Returns
        -------
        str
            A key of :attr:`rows`.

        Raises
        ------
        ValueError
            Unknown method, a GPU-only method on the CPU, n or batch not an int >= 0, a
            device other than cuda / cpu.
        TypeError
            An unsupported dtype.
        LookupError
            :attr:`auto` has no rule for the shape.
        """
        dev = _device_kind(device)
        if not isinstance(method, str) or (method != "auto" and method not in self.rows):
            raise ValueError(f"method must be one of {', '.join(self.names)}, got {method!r}")
        for what, v in (("n", n), ("batch", batch)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{what} must be an int >= 0, got {v!r}")
        if dev not in ("cuda", "cpu"):
            raise ValueError(f"device must be 'cuda' or 'cpu' (or 'cuda:<index>'), got {device!r}")
        name = dtype_info(dtype).name   # TypeError for a dtype no method takes
        if method == "auto":
            chain = (self.auto_from or self)._auto(n, batch, name, dev)
            method = self._ready(chain, call) if call is not None and n and batch else chain[0]
            if dev == "cuda":
                method = self._fitting(method, n, batch, name, str(device))
        row = self.rows[method]
        if dev == "cpu" and row.gpu_only:
            raise ValueError(f"method {method!r} runs on the GPU "
                             f"({row.routine_name(dtype, True)}) and needs a CUDA input")
        if dev == "cuda" and row.cuda is None:
            raise ValueError(f"method {method!r} runs on the CPU only")
        return method


_DEVICE_RE = re.compile(r"cpu|cuda(?::[0-9]{1,4})?")


def _device_kind(device) -> str | None:
    """``"cuda"`` / ``"cpu"`` for a device string :meth:`Table.resolve` takes (``"cuda:1"``
    too), else None; remembered per string (every call of a routine asks)."""
    if isinstance(device, str):
        kind = _KINDS.get(device)
        if kind is not None:
            return kind
    text = str(device)
    kind = text.split(":")[0] if _DEVICE_RE.fullmatch(text) else None
    if kind is not None and isinstance(device, str) and len(_KINDS) < 64:
        _KINDS[device] = kind
    return kind


_KINDS: dict = {}

#: Extra bytes (a row's workspace beyond torch's) below which ``auto`` does not ask the
#: device for its free memory (:meth:`Table._fitting`).
FIT_CHECK_BYTES = 64 << 20


def free_device_bytes(device: str) -> int | None:
    """Bytes a new allocation can take on CUDA ``device`` (``"cuda"``: the current device,
    ``"cuda:1"``): the driver's free memory plus what torch's caching allocator holds
    reserved but unused (``torch.cuda.mem_get_info``, ``memory_reserved``,
    ``memory_allocated``); None where torch sees no CUDA device.

    Examples
    --------
    >>> free_device_bytes("cuda:0")   # doctest: +SKIP
    149624733696
    """
    import torch

    if not torch.cuda.is_available():   # nothing to ask: the call fails where it runs
        return None
    idx = int(device.split(":")[1]) if ":" in device else torch.cuda.current_device()
    free, _total = torch.cuda.mem_get_info(idx)
    return int(free + torch.cuda.memory_reserved(idx) - torch.cuda.memory_allocated(idx))


# --------------------------------------------------------------------------- info and empty input
def info_host(info) -> np.ndarray:
    """``info`` on the host as a NumPy array (one synchronization for a device tensor)."""
    return info.cpu().numpy() if hasattr(info, "cpu") else np.asarray(info)


def raise_for_info(routine: str, info, batch_shape, positive=NotPositiveDefiniteError) -> None:
    """The one place ``info`` is checked: raise for the first failing batch element.

    Parameters
    ----------
    routine : str
        The routine to name in the message (``"cusolverDnXpotrf"``).
    info : array or tensor of the batch shape, int
        LAPACK / cuSOLVER ``info`` per matrix (copied to the host: one synchronization).
    batch_shape : tuple of int
        Batch elements are numbered in C order over these dimensions, as in torch's
        messages; an unbatched ``(n, n)`` input (``()``) gets no batch number.
    positive : exception class
        Raised for ``info > 0``: :class:`NotPositiveDefiniteError` (potrf),
        :class:`SingularFactorError` (potri, trtri) or :class:`SingularMatrixError` (getrf).

    Raises
    ------
    IllegalArgumentError
        ``info < 0``.
    NotPositiveDefiniteError, SingularFactorError, SingularMatrixError
        ``info > 0`` (the class given as ``positive``).

    Examples
    --------
    >>> import numpy as np
    >>> raise_for_info("LAPACK dpotrf", np.zeros(3, np.int32), (3,))   # nothing to raise
    """
    flat = info_host(info).reshape(-1)
    bad = np.flatnonzero(flat)
    if bad.size == 0:
        return
    i = int(bad[0])
    where = i if len(batch_shape) else None
    if flat[i] < 0:
        raise IllegalArgumentError(routine, int(flat[i]), where)
    raise positive(routine, int(flat[i]), where, tuple(batch_shape))


def empty_result(like: Operand, shape, info_shape):
    """Empty results for n = 0 or batch = 0 (cuSOLVER itself rejects n = 0)."""
    if like.kind == "numpy":
        return np.zeros(shape, like.dtype.numpy), np.zeros(info_shape, np.int32)
    import torch

    dev = like.data.device
    out = torch.zeros(shape, dtype=like.dtype.torch, device=dev)
    return wrap(out, like), wrap(torch.zeros(info_shape, dtype=torch.int32, device=dev), like)


def device_of(op: Operand) -> str:
    """``"cuda:<index>"`` or ``"cpu"``: where an operand's work runs (what
    :meth:`Table.resolve` takes)."""
    return f"cuda:{op.data.get_device()}" if op.on_gpu else "cpu"
