"""Setup for ``pytest benchmarks/`` (pytest-benchmark), run from the repository root.

GPU skips (with the reason) and one-GPU-per-xdist-worker pinning come from the project's
plugin ``cusolver_trace._pytest_gpus``, loaded by ``addopts`` in pyproject.toml; the
``gpu_results`` fixture it provides collects CUDA-event rows, merged across workers into
``.benchmarks/gpu-results.json``.
"""
