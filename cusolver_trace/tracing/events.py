"""The event model: everything a trace knows, as :class:`Event` s, in the spirit of Kineto's
activities.

An event has a ``name``, an ``activity`` (:data:`ACTIVITIES`: ``"api"`` -- a cuSOLVER /
cuBLAS call from the libraries' loggers; ``"kernel"``, ``"memcpy"``, ``"memset"`` -- GPU
activities from torch.profiler / CUPTI; ``"range"`` -- a labelled stretch such as a
``#### label`` section), a ``start_us`` and ``dur_us`` on the profiler's timeline, a
``stream``, a ``correlation`` id, typed ``args`` and a ``parent``: a cuBLAS call made inside a
cuSOLVER call has that call as parent (and is one of its ``children``); a GPU activity has
the call that launched it (and is one of its ``kernels``), or no parent when it belongs to
no library call (torch's own kernels). The call tree, the summary, ``--by op|line``, the
diff and the Chrome export are views of these events.

``ApiCall`` is the name the package uses for an event of activity ``"api"``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._hook import call_kind

__all__ = ["ACTIVITIES", "Event", "ApiCall", "Pointer", "KernelStat", "AtenOp", "kernel_stats",
           "library_of"]

ACTIVITIES = ("api", "kernel", "memcpy", "memset", "range")


class Pointer(str):
    """A pointer / handle value, kept as a lower-case hex string (``"0x7fe357e00000"``).

    A ``str`` subclass so that it serialises to JSON as a plain string while
    :meth:`Event.pointers` can tell pointers from other arguments.
    """

    __slots__ = ()


@dataclass(eq=False, slots=True)
class Event:
    """One activity of a trace (see the module docstring).

    Attributes
    ----------
    name : str              function (``"cusolverDnXpotrs"``), kernel name or range label
    activity : str          one of :data:`ACTIVITIES`
    start_us, dur_us : float | None   on the profiler's timeline (µs from its first event);
                            ``None``: not timed (a captured log)
    stream : int | None     CUDA stream of a GPU activity
    correlation : int | None  the record's index in the log (api), CUPTI's id (GPU activities)
    args : dict             typed arguments in logged order: ints as ``int``; enums rendered
                            (``uplo="LOWER"``, ``trans="N"``); data types as printed
                            (``"CUDA_R_64F"``); pointers and handles as :class:`Pointer` s
    parent : Event | None   the call that issued this call / launched this activity
    children : list[Event]  calls issued inside this call (cuBLAS under cuSOLVER)
    kernels : list[Event] | None  GPU activities this call launched itself (not its
                            children's); ``None``: not measured
    library : str | None    ``"cuSOLVER"`` / ``"cuBLAS"`` (api); the kernel's library is
                            :func:`~.kernels.classify_kernel` of its name
    line : int | None       1-based line of the record in the log
    section : str | None    label of the enclosing ``#### label`` section
    device : int | None     GPU of a GPU activity
    pid, time               process id and timestamp the logger printed
    truncated : bool        a cuBLAS record cut off by the end of the log (crash)
    op : str | None         the torch op that issued the call (``aten::cholesky_inverse``)
    where, code : str | None  ``file:line`` and source text of the user's Python line
    """

    name: str
    activity: str = "api"
    start_us: float | None = None
    dur_us: float | None = None
    stream: int | None = None
    correlation: int | None = None
    args: dict = field(default_factory=dict)
    parent: "Event | None" = None
    children: list = field(default_factory=list)
    kernels: list | None = None
    library: str | None = None
    line: int | None = None
    section: str | None = None
    device: int | None = None
    pid: Any = None
    time: str | None = None
    truncated: bool = False
    op: str | None = None
    where: str | None = None
    code: str | None = None

    @property
    def function(self) -> str:
        """The API function (the event's name)."""
        return self.name

    @property
    def kind(self) -> str:
        """Of an API call: ``"compute"``, ``"query"`` or ``"setup"`` (:func:`~._hook.call_kind`)."""
        return call_kind(self.name)

    @property
    def handle(self) -> str | None:
        h = self.args.get("handle")
        return h if isinstance(h, Pointer) else None

    @property
    def gpu_ms(self) -> float | None:
        """GPU ms of a GPU activity; of a call, of the activities it launched itself."""
        if self.activity != "api":
            return None if self.dur_us is None else self.dur_us / 1e3
        if self.kernels is None:
            return None
        return sum(k.dur_us or 0.0 for k in self.kernels) / 1e3

    def pointers(self) -> dict[str, str]:
        """Pointer / handle arguments (hex strings)."""
        return {k: v for k, v in self.args.items() if isinstance(v, Pointer)}

    def values(self) -> dict[str, Any]:
        """Non-pointer arguments: what identifies a call across repeats."""
        return {k: v for k, v in self.args.items() if not isinstance(v, Pointer)}

    def label(self) -> str:
        """``cusolverDnXpotrs  uplo=LOWER n=256 ...`` (the non-pointer arguments)."""
        return f"{self.name}  " + " ".join(f"{k}={v}" for k, v in self.values().items())

    def walk(self):
        """This event and every call nested under it, depth first."""
        yield self
        for c in self.children:
            yield from c.walk()


ApiCall = Event


def library_of(function: str) -> str | None:
    """The library an API function's name says: ``cusolver…`` -> ``"cuSOLVER"``,
    ``cublas…`` -> ``"cuBLAS"``, anything else ``None``.

    Parameters
    ----------
    function : str

    Returns
    -------
    str or None

    Examples
    --------
    >>> library_of("cusolverDnXpotrs"), library_of("cublasDtrsm_v2_64"), library_of("f")
    ('cuSOLVER', 'cuBLAS', None)
    """
    if function.startswith("cusolver"):
        return "cuSOLVER"
    return "cuBLAS" if function.startswith("cublas") else None


@dataclass
class KernelStat:
    """GPU activities of one name: ``count`` launches, ``gpu_ms`` summed (ms)."""

    name: str
    library: str
    gpu_ms: float
    count: int

    @property
    def mean_ms(self) -> float:
        return self.gpu_ms / self.count if self.count else 0.0

    def to_dict(self) -> dict:
        return {"name": self.name, "library": self.library, "count": self.count,
                "total_ms": self.gpu_ms, "mean_ms": self.mean_ms}


@dataclass
class AtenOp:
    """An ``aten::`` operator seen by torch.profiler; ``cpu_ms`` is its summed inclusive host
    time in milliseconds over ``count`` calls."""

    name: str
    count: int
    cpu_ms: float

    def to_dict(self) -> dict:
        return {"name": self.name, "count": self.count, "cpu_ms": self.cpu_ms}


def kernel_stats(activities) -> list[KernelStat]:
    """Per-name aggregates of GPU activities, largest total first.

    Parameters
    ----------
    activities : iterable of Event

    Returns
    -------
    list of KernelStat

    Examples
    --------
    >>> ks = kernel_stats([Event("k", "kernel", 0.0, 2.0), Event("k", "kernel", 5.0, 4.0)])
    >>> (ks[0].name, ks[0].count, ks[0].gpu_ms, ks[0].mean_ms)
    ('k', 2, 0.006, 0.003)
    """
    from .kernels import classify_kernel

    acc: dict[str, list] = {}
    for a in activities:
        s = acc.setdefault(a.name, [0.0, 0])
        s[0] += a.dur_us or 0.0
        s[1] += 1
    out = [KernelStat(n, classify_kernel(n), us / 1e3, c) for n, (us, c) in acc.items()]
    out.sort(key=lambda k: (-k.gpu_ms, -k.count, k.name))
    return out
