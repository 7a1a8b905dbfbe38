"""A BoTorch / GPyTorch client: a real program to trace with ``cusolver-trace trace``.

An exact GP (BoTorch's ``SingleTaskGP``: GPyTorch, Cholesky solves below its
``max_cholesky_size``) fitted on ``--n`` points of the 6-dimensional Hartmann function by
``fit_gpytorch_mll`` (L-BFGS-B on the marginal log likelihood), then one candidate batch from
``qLogExpectedImprovement`` optimized by ``optimize_acqf`` with ``--restarts`` restarts from
``--raw-samples`` raw samples. float64, on ``cuda`` when a GPU is visible.

    python3 examples/trace_botorch.py [--n 300] [--q 2] [--restarts 4] [--raw-samples 64]
    cusolver-trace trace --json botorch.json -- python3 examples/trace_botorch.py
    cusolver-trace trace --by op --no-tree -- python3 examples/trace_botorch.py --n 300

Needs ``botorch`` (and so ``gpytorch``); without them it says so in one line and exits 2.
Prints one line: the points, the fit and acquisition times, the best value found.
"""
from __future__ import annotations

import argparse
import sys
import time


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def run(n: int, q: int, restarts: int, raw_samples: int, seed: int, device) -> dict:
    """Fit the GP and optimize the acquisition; returns the times (s) and the results."""
    import torch
    from botorch.acquisition.logei import qLogExpectedImprovement
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from botorch.models.transforms import Normalize, Standardize
    from botorch.optim import optimize_acqf
    from botorch.test_functions import Hartmann
    from gpytorch.mlls import ExactMarginalLogLikelihood

    torch.manual_seed(seed)
    tkw = {"dtype": torch.float64, "device": device}
    f = Hartmann(dim=6, negate=True).to(**tkw)
    X = torch.rand(n, 6, **tkw)
    Y = f(X).unsqueeze(-1)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    t0 = time.perf_counter()
    model = SingleTaskGP(X, Y, input_transform=Normalize(d=6), outcome_transform=Standardize(m=1))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    sync()
    t1 = time.perf_counter()
    acqf = qLogExpectedImprovement(model, best_f=Y.max())
    bounds = torch.stack([torch.zeros(6, **tkw), torch.ones(6, **tkw)])
    candidates, value = optimize_acqf(acqf, bounds=bounds, q=q, num_restarts=restarts,
                                      raw_samples=raw_samples)
    sync()
    t2 = time.perf_counter()
    return {"fit_s": t1 - t0, "acq_s": t2 - t1, "best_y": float(Y.max()),
            "acq_value": float(value), "candidates": candidates.shape[0],
            "new_y": float(f(candidates).max())}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=_positive, default=300, help="training points (default 300)")
    p.add_argument("--q", type=_positive, default=2, help="candidates per batch (default 2)")
    p.add_argument("--restarts", type=_positive, default=4, help="optimize_acqf restarts (4)")
    p.add_argument("--raw-samples", type=_positive, default=64, help="raw samples (default 64)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    args = p.parse_args(argv)
    try:
        import botorch  # noqa: F401
        import gpytorch  # noqa: F401
    except ImportError as e:
        print(f"trace_botorch.py: needs botorch and gpytorch ({e})", file=sys.stderr)
        return 2
    import torch

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    r = run(args.n, args.q, args.restarts, args.raw_samples, args.seed, device)
    print(f"SingleTaskGP n={args.n} Hartmann-6 float64 on {device}: fit {r['fit_s']:.3f} s, "
          f"qLogEI q={args.q} ({args.restarts} restarts, {args.raw_samples} raw samples) "
          f"{r['acq_s']:.3f} s; best y {r['best_y']:.4f}, candidates' best {r['new_y']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
