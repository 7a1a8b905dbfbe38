"""Test setup lives in the project's pytest plugin ``cusolver_trace._pytest_gpus``
(loaded by ``addopts`` in pyproject.toml): ``gpu`` tests skip with the reason where no usable
GPU is present, and xdist workers are pinned one per GPU."""
