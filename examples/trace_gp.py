"""An exact Gaussian-process fit: a real program to trace with ``cusolver-trace trace``.

RBF kernel K(X, X) + σ²I, its Cholesky factor, ``cholesky_solve`` for α = K⁻¹y, the
log marginal likelihood, and a few Adam steps on the hyperparameters (length
scale, output scale, noise). Uses GPyTorch when it is importable (``--impl
gpytorch``), else the self-contained torch version below (``--impl torch``,
the default when GPyTorch is missing). Runs on ``cuda`` when a GPU is visible,
else on the CPU.

    python3 examples/trace_gp.py [--n 2000] [--d 3] [--steps 20] [--dtype float64]
    cusolver-trace trace --by op -- python3 examples/trace_gp.py --n 2000
    cusolver-trace trace --by line --no-tree -- python3 examples/trace_gp.py --n 6000 --steps 30

The defaults (n = 6000, 50 steps, float64 on a GPU) are meant to take roughly 5-30 s on
an H200 with the loggers and the profiler on (most of it start-up: torch, CUDA,
the libraries); on the CPU n defaults to 500 (seconds to tens of seconds). A fit that takes more than
2 s shows a progress line on stderr.
"""
from __future__ import annotations

import argparse
import math
import pathlib
import sys
import time


def _positive(text: str) -> int:
    v = int(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def make_data(n: int, d: int, device, dtype, seed: int = 0):
    """Points in [0, 1]^d and noisy observations of a smooth function."""
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, d, generator=g, dtype=dtype)
    y = torch.sin(6.0 * x).sum(-1) + 0.1 * torch.randn(n, generator=g, dtype=dtype)
    return x.to(device), y.to(device)


def rbf(x1, x2, lengthscale, outputscale):
    """Squared-exponential kernel matrix."""
    import torch

    d2 = torch.cdist(x1 / lengthscale, x2 / lengthscale).pow(2)
    return outputscale * torch.exp(-0.5 * d2)


def neg_mll_torch(x, y, raw):
    """Negative log marginal likelihood per data point, through cholesky / cholesky_solve."""
    import torch
    import torch.nn.functional as F

    lengthscale, outputscale, noise = (F.softplus(r) + 1e-4 for r in raw)
    n = x.shape[0]
    K = rbf(x, x, lengthscale, outputscale)
    K = K + noise * torch.eye(n, dtype=x.dtype, device=x.device)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y.unsqueeze(-1), L)
    fit = 0.5 * (y.unsqueeze(-1) * alpha).sum()
    logdet = torch.log(torch.diagonal(L)).sum()
    return (fit + logdet + 0.5 * n * math.log(2 * math.pi)) / n


def fit_torch(x, y, steps: int, lr: float = 0.1, on_step=lambda k: None):
    import torch

    raw = [torch.zeros((), dtype=x.dtype, device=x.device, requires_grad=True) for _ in range(3)]
    opt = torch.optim.Adam(raw, lr=lr)
    losses = []
    for k in range(steps):
        on_step(k)
        opt.zero_grad()
        loss = neg_mll_torch(x, y, raw)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def fit_gpytorch(x, y, steps: int, lr: float = 0.1, on_step=lambda k: None):  # pragma: no cover
    import gpytorch
    import torch

    class ExactGP(gpytorch.models.ExactGP):
        def __init__(self, x, y, likelihood):
            super().__init__(x, y, likelihood)
            self.mean = gpytorch.means.ZeroMean()
            self.cov = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel())

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean(x), self.cov(x))

    likelihood = gpytorch.likelihoods.GaussianLikelihood().to(x.device, x.dtype)
    model = ExactGP(x, y, likelihood).to(x.device, x.dtype)
    model.train()
    likelihood.train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    mll = gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)
    losses = []
    # exact solves (Cholesky), not CG: that is what this example is about
    with gpytorch.settings.max_cholesky_size(10**9):
        for k in range(steps):
            on_step(k)
            opt.zero_grad()
            loss = -mll(model(x), y)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    return losses


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=_positive, default=None,
                   help="training points (default 6000 on a GPU, 500 on the CPU)")
    p.add_argument("--d", type=_positive, default=3, help="input dimensions (default 3)")
    p.add_argument("--steps", type=_positive, default=50, help="Adam steps (default 50)")
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    p.add_argument("--impl", choices=("auto", "torch", "gpytorch"), default="auto",
                   help="GPyTorch if importable (auto), or the plain torch GP")
    p.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    args = p.parse_args(argv)

    import torch

    impl = args.impl
    if impl == "auto":
        try:
            import gpytorch  # noqa: F401
            impl = "gpytorch"
        except ImportError:
            impl = "torch"
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if args.n is None:
        args.n = 6000 if device.type == "cuda" else 500
    dtype = getattr(torch, args.dtype)
    x, y = make_data(args.n, args.d, device, dtype)
    t0 = time.perf_counter()
    import contextlib

    try:   # a progress line on stderr once the fit has run 2 s
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))   # a checkout
        from cusolver_trace._console import progress
    except ImportError:  # pragma: no cover - run without the package
        progress = None
    with (progress(f"exact GP n={args.n}", args.steps) if progress else contextlib.nullcontext()) as bar:
        step = (lambda k: bar.step("Adam step")) if bar is not None else (lambda k: None)
        losses = (fit_gpytorch if impl == "gpytorch" else fit_torch)(x, y, args.steps,
                                                                     on_step=step)
    if device.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"exact GP ({impl}) n={args.n} d={args.d} {args.dtype} on {device}: "
          f"{args.steps} Adam steps in {dt:.3f} s; loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    if not all(math.isfinite(v) for v in losses):
        print("the loss is not finite", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
