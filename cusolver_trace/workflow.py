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

__all__ = ["DeviceRun", "run_workflow", "torch_workflow", "replay_workflow"]


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


def run_workflow(devices=None, *, n: int = 4096, dtype: str = "float64", seed: int = 0,
                 repeat: int = 10, warmup: int = 3) -> list[DeviceRun]:
    """Run the workflow on each device (default: every visible GPU, else the CPU).

    The same seeded input (built on the CPU in float64, then moved) goes to
    every device, so results can be compared bit for bit across devices.
    Returns one :class:`DeviceRun` per device, in order.
    """
    import torch

    if devices is None:
        devices = ([f"cuda:{i}" for i in range(torch.cuda.device_count())]
                   if torch.cuda.is_available() else ["cpu"])
    A_host = spd(n, cond=1e3, dtype=dtype, seed=seed)
    runs = []
    for dev in devices:
        dev = torch.device(dev)
        A = A_host.to(dev)
        U_t, U_r = torch_workflow(A), replay_workflow(A)
        t = time_calls({"torch": lambda: torch_workflow(A), "replay": lambda: replay_workflow(A)},
                       device=dev if dev.type == "cuda" else None, warmup=warmup, repeat=repeat)
        name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU (LAPACK)"
        runs.append(DeviceRun(str(dev), name, t["torch"], t["replay"],
                              checks.bitwise_equal(U_t, U_r), U_t.cpu()))
    return runs


def render(runs: list[DeviceRun]):
    """A rich table of per-device medians, ratios to the first device, and bitwise agreement."""
    from rich.table import Table

    first = runs[0]
    t = Table(title="hello_cholesky workflow: cholesky → cholesky_inverse → cholesky(upper)")
    for col in ("device", "GPU", "torch ms [IQR]", "replay ms [IQR]", "replay/torch",
                f"torch time / {first.device}", "torch == replay (bits)", f"U == U on {first.device} (bits)"):
        t.add_column(col)
    for r in runs:
        t.add_row(r.device, r.name, f"{r.torch.median_ms:.3f} [{r.torch.iqr_ms:.3f}]",
                  f"{r.replay.median_ms:.3f} [{r.replay.iqr_ms:.3f}]", f"{r.ratio:.3f}",
                  f"{r.torch.median_ms / first.torch.median_ms:.3f}", str(r.torch_equals_replay),
                  str(checks.bitwise_equal(r.U, first.U)))
    return t
