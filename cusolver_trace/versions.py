"""Provenance: package versions, the CUDA libraries actually loaded, and the GPU.

Bit-for-bit comparisons between torch and the raw layer assume both call the
*same* libcusolver / libcublas files; :func:`versions` reads
``/proc/self/maps`` to see which files are mapped into this process and says
whether they are shared (one file per library) or not (a warning).
"""
from __future__ import annotations

import importlib.metadata as _md
import os
import platform
import re
import sys
import warnings

__all__ = ["versions", "loaded_libraries"]

_LIBS = ("libcusolver", "libcublas", "libcublasLt", "libcudart", "libmagma")


def _dist_version(*names):
    for name in names:
        try:
            return _md.version(name)
        except _md.PackageNotFoundError:
            continue
    return None


def loaded_libraries(maps_path: str = "/proc/self/maps") -> dict[str, list[str]]:
    """Real paths of the CUDA math libraries mapped into this process, by library stem.

    Returns ``{"libcusolver": [...], "libcublas": [...], ...}`` (empty lists on
    systems without ``/proc``, or before anything loaded them).
    """
    found: dict[str, set] = {k: set() for k in _LIBS}
    try:
        with open(maps_path) as fh:
            lines = fh.read().splitlines()
    except OSError:
        return {k: [] for k in _LIBS}
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) < 6 or ".so" not in parts[5]:
            continue
        path = parts[5].strip()
        m = re.match(r"(lib[A-Za-z]+)\.so", os.path.basename(path))
        if m and m.group(1) in found:
            found[m.group(1)].add(os.path.realpath(path))
    return {k: sorted(v) for k, v in found.items()}


def _gpu_facts(torch) -> dict:
    out = {"available": torch.cuda.is_available(), "devices": []}
    if not out["available"]:
        out["note"] = "no CUDA GPU visible: routines run on the CPU through LAPACK (scipy)"
        return out
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        out["devices"].append({"index": i, "name": p.name, "compute_capability": f"{p.major}.{p.minor}",
                               "memory_GiB": round(p.total_memory / 2**30, 1),
                               "multiprocessors": p.multi_processor_count})
    try:
        import cupy

        v = cupy.cuda.runtime.driverGetVersion()
        out["driver_cuda_version"] = f"{v // 1000}.{(v % 1000) // 10}"
    except Exception as exc:  # CuPy missing: say so, do not fail
        out["driver_cuda_version"] = f"unknown ({type(exc).__name__})"
    try:
        import subprocess

        r = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
        if r.returncode == 0:
            out["driver_version"] = r.stdout.split()[0]
    except Exception:
        pass
    return out


def _library_versions(torch) -> dict:
    """Load cuSOLVER/cuBLAS through torch and through the raw layer, then report versions."""
    out: dict = {}
    # torch loads its libraries lazily: one tiny call each makes them appear in the maps
    a = torch.ones(1, 1, device="cuda", dtype=torch.float64)
    torch.linalg.cholesky(a)
    torch.cholesky_inverse(a)
    torch.cuda.synchronize()
    try:
        from .backends import cuda

        out.update(cuda.library_versions(a.device))
        out["raw_layer"] = "ok"
    except Exception as exc:
        out["raw_layer"] = f"unavailable: {exc}"
    return out


def versions(load_gpu_libraries: bool = True) -> dict:
    """Versions and library provenance of this process, as a JSON-ready dict.

    Keys: ``python``, ``platform``, ``packages`` (torch, torch's CUDA, cupy,
    nvmath-python, numpy, scipy, cusolver-trace), ``gpu`` (name, compute
    capability, driver; or a note that there is no GPU), ``libraries`` (cuSOLVER
    and cuBLAS version numbers and the files loaded), ``shared_libraries``
    (True when torch and the raw layer can only be using the same libcusolver and
    libcublas files: exactly one of each is mapped) and ``warnings``.

    With ``load_gpu_libraries`` (default) and a GPU present, it first makes one
    tiny torch call and one raw call so that both sides' libraries are loaded.
    """
    import numpy
    import scipy
    import torch

    info = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": {
            "cusolver-trace": _dist_version("cusolver-trace") or "source tree",
            "torch": torch.__version__,
            "torch.version.cuda": torch.version.cuda,
            "numpy": numpy.__version__,
            "scipy": scipy.__version__,
            "cupy": _dist_version("cupy-cuda13x", "cupy-cuda12x", "cupy"),
            "nvmath-python": _dist_version("nvmath-python"),
        },
        "gpu": _gpu_facts(torch),
        "warnings": [],
    }
    if info["gpu"]["available"] and load_gpu_libraries:
        info["libraries"] = _library_versions(torch)
    files = loaded_libraries()
    info.setdefault("libraries", {})["files"] = {k: v for k, v in files.items() if v}
    if info["gpu"]["available"]:
        shared = len(files["libcusolver"]) == 1 and len(files["libcublas"]) == 1
        info["shared_libraries"] = shared
        if not shared:
            msg = ("torch and the raw layer may use different libcusolver/libcublas files "
                   f"({files['libcusolver']}, {files['libcublas']}): bit-for-bit agreement is "
                   "not expected")
            info["warnings"].append(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
    else:
        info["shared_libraries"] = None
    return info
