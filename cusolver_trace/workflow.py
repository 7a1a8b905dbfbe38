"""The original ``hello_cholesky`` workflow, timed correctly, on every visible GPU.

Workflow (float64 by default): ``L = cholesky(A)``; ``Ainv = cholesky_inverse(L)``;
``U = cholesky(Ainv, upper=True)`` — once with torch's functions and once with
the replay of their library calls (``cusolverDnXpotrf``, ``cusolverDnXpotrs`` on
the identity, ``cusolverDnXpotrf`` with ``uplo = UPPER``).

The original script timed one call per device with a host clock and no
synchronization, so it measured launch time plus, on ``cuda:0``, library
loading and handle creation (a ratio of 5.5 between two identical H200s).
Here every device gets warm-up calls and CUDA-event timing (median and IQR of
``repeat`` runs, torch and replay interleaved), and the final factors are
compared bit for bit between torch and the replay and across devices.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import checks, routines
from .matrices import spd
from .timing import Timing, time_calls

__all__ = ["DeviceRun", "run_workflow", "run_op", "run_on_devices", "visible_devices",
           "torch_workflow", "replay_workflow", "render"]


def torch_workflow(A):
    """torch: cholesky → cholesky_inverse → cholesky(upper=True); returns U, (..., n, n)."""
    import torch

    L = torch.linalg.cholesky(A)
    return torch.linalg.cholesky(torch.cholesky_inverse(L), upper=True)


def replay_workflow(A):
    """The same through raw cuSOLVER (or LAPACK on the CPU); returns U, (..., n, n)."""
    L, _ = routines.potrf(A, check=False)
    U, _ = routines.potrf(routines.cholesky_inverse(L, check=False), upper=True, check=False)
    return U


@dataclass
class DeviceRun:
    """One device's results: timings (ms), bitwise agreement, and the factor (kept on the CPU)."""

    device: str
    name: str
    torch: Timing
    replay: Timing
    torch_equals_replay: bool
    U: object

    @property
    def ratio(self) -> float:
        """replay / torch median time."""
        return self.replay.median_ms / self.torch.median_ms


def physical_gpu_ids() -> list[str]:
    """GPU ids to pin worker processes to: ``CUDA_VISIBLE_DEVICES`` if set, else one per
    line of ``nvidia-smi -L`` (which, unlike torch, does not initialize CUDA here)."""
    import os
    import subprocess

    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip()]
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(out.stdout.splitlines()) if line.startswith("GPU ")]


def visible_devices() -> list[str]:
    """Every visible GPU (``cuda:0``, ``cuda:1``, ...), else ``["cpu"]``."""
    import torch

    if torch.cuda.is_available():
        return [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return ["cpu"]


def run_on_devices(build, devices=None, *, repeat: int = 10, warmup: int = 3) -> list[DeviceRun]:
    """Time a (torch, replay) pair of callables on each device, interleaved, with CUDA events.

    ``build(device) -> (torch_fn, replay_fn)``; each callable returns the final
    tensor, kept (on the CPU) to compare torch with the replay on each device and
    every device with the first, bit for bit.
    """
    import torch

    runs = []
    for dev in devices or visible_devices():
        dev = torch.device(dev)
        torch_fn, replay_fn = build(dev)
        U_t, U_r = torch_fn(), replay_fn()
        t = time_calls({"torch": torch_fn, "replay": replay_fn},
                       device=dev if dev.type == "cuda" else None, warmup=warmup, repeat=repeat)
        name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU (LAPACK)"
        runs.append(DeviceRun(str(dev), name, t["torch"], t["replay"], same_bits(U_t, U_r),
                              _on_cpu(U_t)))
    return runs


def _parts(x) -> tuple:
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _on_cpu(x):
    """A result (a tensor, or a tuple of them such as ``(LU, pivots)`` / ``(w, V)``) on the CPU."""
    parts = tuple(p.cpu() for p in _parts(x))
    return parts if isinstance(x, (tuple, list)) else parts[0]


def same_bits(a, b) -> bool:
    """Every bit of every part equal (floating parts as bits, integer parts exactly)."""
    import torch

    pa, pb = _parts(a), _parts(b)
    if len(pa) != len(pb):
        return False
    for x, y in zip(pa, pb):
        if x.is_floating_point() or x.is_complex():
            if not checks.bitwise_equal(x, y):
                return False
        elif x.shape != y.shape or not torch.equal(x.cpu(), y.cpu()):
            return False
    return True


def run_workflow(devices=None, *, n: int = 4096, dtype: str = "float64", seed: int = 0,
                 repeat: int = 10, warmup: int = 3) -> list[DeviceRun]:
    """Run the hello_cholesky workflow on each device (default: every visible GPU, else the CPU).

    The same seeded input (built on the CPU in float64, then moved) goes to
    every device, so results can be compared bit for bit across devices.
    """
    A_host = spd(n, cond=1e3, dtype=dtype, seed=seed)

    def build(dev):
        A = A_host.to(dev)
        return (lambda: torch_workflow(A)), (lambda: replay_workflow(A))

    return run_on_devices(build, devices, repeat=repeat, warmup=warmup)


def run_op(op, devices=None, *, n: int = 1024, batch: int = 1, nrhs: int = 1,
           dtype: str = "float64", options=None, seed: int = 0, repeat: int = 10,
           warmup: int = 3) -> list[DeviceRun]:
    """Like :func:`run_workflow` for one registered op: torch's call vs its replay
    (``options``: the op's options, a mapping; default torch's defaults).

    Raises
    ------
    cusolver_trace.ops.OpError
        Unknown op, or one without a replay.
    """
    from . import ops
    from .matrices import structured

    o = ops.get(op)
    o.require_replay()
    opts = o.options_from(**dict(options or {}))
    A_host = structured(o.structure, n, batch=() if batch == 1 else (batch,), cond=1e3,
                        dtype=dtype, seed=seed)

    def build(dev):
        inputs = ops.prepare_inputs(o, A_host.to(dev), opts=opts, nrhs=nrhs, seed=seed)
        replay = o.replay_call(inputs, opts)   # decided once, outside the timing loop
        return ((lambda: o.torch_call(inputs, opts)[0]), (lambda: replay()[0]))

    return run_on_devices(build, devices, repeat=repeat, warmup=warmup)


def render(runs: list[DeviceRun], title: str = "hello_cholesky workflow: cholesky → cholesky_inverse "
                                               "→ cholesky(upper)"):
    """A rich table of per-device medians, ratios to the first device, and bitwise agreement."""
    from rich.table import Table

    first = runs[0]
    t = Table(title=title)
    for col in ("device", "GPU", "torch ms [IQR]", "replay ms [IQR]", "replay/torch",
                f"torch time / {first.device}", "torch == replay (bits)", f"result == result on {first.device} (bits)"):
        t.add_column(col)
    def ms(tm):  # "~" marks a noisy median (IQR over 20 % of it), as compare's table does
        return f"{'~' if tm.noisy else ''}{tm.median_ms:.3f} [{tm.iqr_ms:.3f}]"

    for r in runs:
        t.add_row(r.device, r.name, ms(r.torch), ms(r.replay), f"{r.ratio:.3f}",
                  f"{r.torch.median_ms / first.torch.median_ms:.3f}", str(r.torch_equals_replay),
                  str(same_bits(r.U, first.U)))
    captions = []
    if any(tm.noisy for r in runs for tm in (r.torch, r.replay)):
        captions.append("~ noisy: the IQR is more than 20 % of the median, or fewer than 3 "
                        "samples (more --repeat / --warmup)")
    if any(r.device == "cpu" and not r.torch_equals_replay for r in runs):
        captions.append("cpu: torch's bundled LAPACK against scipy's, two libraries: equal bits "
                        "are not expected there (compare judges them by LAPACK's ratio)")
    if captions:
        t.caption = "\n".join(captions)
    return t
