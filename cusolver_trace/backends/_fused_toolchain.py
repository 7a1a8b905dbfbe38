"""The fused kernels' toolchain: whether the fused method can run here, and compiling.

:func:`_tools` imports nvmath-python's device API (cuSOLVERDx through libmathdx), NVRTC and
nvJitLink once, or raises :class:`FusedUnavailableError` naming the extra :data:`EXTRA`;
:func:`available` says whether the method can run (the extra and a CUDA GPU);
:func:`versions` gives the library versions a compiled kernel depends on;
:func:`suggested` asks cuSOLVERDx for its launch configuration; :func:`compile_kernel`
builds one kernel's cubin (cuSOLVERDx LTO-IR + the kernel through NVRTC, linked by
nvJitLink with cuSOLVERDx's universal fatbin, fetched once per process), recording the seconds
of each stage. Compiling needs the extra, not a GPU; one compile runs at a time per process.
Every public name is imported from :mod:`cusolver_trace.backends.fused`.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time

from ._fused_layout import _DTYPES, FusedKey
from ._fused_source import DiskCache, kernel_source

EXTRA = "cusolver-trace[cuda13-fused]"
"""The pip extra that installs what this backend needs."""


try:
    from ..errors import GPUUnavailableError as _Base
except ImportError:  # pragma: no cover - errors is part of the package
    _Base = RuntimeError


class FusedUnavailableError(_Base):
    """The fused (cuSOLVERDx) method cannot run here: its extra (:data:`EXTRA`) is not
    installed or does not load. A :class:`~cusolver_trace.errors.GPUUnavailableError`."""


def missing_extra_message(exc: BaseException | None = None) -> str:
    """The one message for a missing extra (names the extra to install)."""
    why = f" ({type(exc).__name__}: {exc})" if exc is not None else ""
    return (f"method 'fused' needs cuSOLVERDx through nvmath-python's device API, numba-cuda, "
            f"libmathdx, NVRTC and nvJitLink{why}; install them with: pip install '{EXTRA}'")


_TOOLS = None


def _tools():
    """nvmath.device, mathdx, NVRTC and nvJitLink bindings, imported once; raises
    :class:`FusedUnavailableError` naming the extra when any is missing."""
    global _TOOLS, _TOOLS_ERROR
    if _TOOLS is not None:
        return _TOOLS
    if _TOOLS_ERROR is not None:   # a failed import is not retried on every call (~70 µs)
        raise FusedUnavailableError(_TOOLS_ERROR)
    try:
        import numpy as np

        if not hasattr(np, "row_stack"):  # numba-cuda <= 0.2x calls it; numpy 2.5 removed it
            np.row_stack = np.vstack
        import nvmath
        from cuda.bindings import nvjitlink, nvrtc
        from nvmath.bindings import mathdx
        from nvmath.device import Solver
        from nvmath.device.common_cuda import ComputeCapability
        from nvmath.device.cusolverdx import compile_solver_execute
        from nvmath.device.cusolverdx_backend import get_universal_fatbin  # noqa: F401
    except Exception as exc:  # ImportError, or a library that fails to load
        if isinstance(exc, (ImportError, OSError)):   # missing: remembered; anything else retried
            _TOOLS_ERROR = missing_extra_message(exc)
        raise FusedUnavailableError(missing_extra_message(exc)) from exc
    _TOOLS = {"np": np, "Solver": Solver, "CC": ComputeCapability, "mathdx": mathdx,
              "compile": compile_solver_execute, "nvrtc": nvrtc, "nvjitlink": nvjitlink,
              "nvmath_version": getattr(nvmath, "__version__", "?")}
    return _TOOLS


def available() -> str | None:
    """None when the fused method can run here, else the reason (one line). A yes is
    remembered for the process (``auto`` asks on every call)."""
    global _AVAILABLE
    if _AVAILABLE:
        return None
    try:
        _tools()
        import torch

        if not torch.cuda.is_available():
            return "no CUDA GPU is visible to torch"
    except FusedUnavailableError as exc:
        return str(exc)
    _AVAILABLE = True
    return None


_AVAILABLE = False


_TOOLS_ERROR = None   # why _tools() failed, once it has


def versions() -> dict:
    """Versions that a compiled kernel depends on (part of the disk-cache key)."""
    global _VERSIONS
    if _VERSIONS is None:
        _VERSIONS = _versions()
    return dict(_VERSIONS)


_VERSIONS = None


def _versions() -> dict:
    t = _tools()
    err, major, minor = t["nvrtc"].nvrtcVersion()
    return {"nvmath": t["nvmath_version"], "libmathdx": ".".join(map(str, t["mathdx"].get_version_ex())),
            "nvrtc": f"{major}.{minor}", "nvjitlink": ".".join(map(str, t["nvjitlink"].version()))}


def _solver(t, fn, key: FusedKey):
    real, is_complex, _ = _DTYPES[key.dtype]
    np = t["np"]
    size = (key.n, key.n, key.kc if fn == "potrs" else 1)
    arr = (key.arr_a, key.arr_b if fn == "potrs" else key.arr_a)
    lds = (key.lda, key.ldb) if fn == "potrs" else (key.lda,)
    return t["Solver"](function=fn, size=size, precision=np.float64 if real == "double" else np.float32,
                       execution="Block", sm=t["CC"](*key.sm), arrangement=arr, leading_dimensions=lds,
                       fill_mode="upper" if key.upper else "lower",
                       batches_per_block=key.batches_per_block,
                       data_type="complex" if is_complex else "real", block_dim=key.block)


def suggested(op: str, n: int, nrhs: int, dtype: str, upper: bool, sm: tuple, *,
              ask: bool = True) -> tuple | None:
    """cuSOLVERDx's suggested ``(batches_per_block, block)`` for the kernel's main call
    (potrs for the solving kernels, potrf for ``potrf``). Asking libmathdx takes ~0.3 s,
    so answers are kept in memory and in the disk cache; ``ask=False``: None when neither
    holds the answer (libmathdx is not asked)."""
    args = (op, n, nrhs, dtype, bool(upper), tuple(sm))
    hit = _SUGGESTED.get(args)
    if hit is not None:
        return hit
    cache = DiskCache()
    digest = hashlib.sha256(json.dumps({"suggested": list(args), "versions": versions()},
                                       sort_keys=True, default=list).encode()).hexdigest()[:32]
    found = cache.load(digest)
    if found is not None:
        bpb, block = found[1]["suggested"]
        hit = _SUGGESTED[args] = (int(bpb), tuple(block))
        return hit
    if not ask:
        return None
    hit = _SUGGESTED[args] = _ask_suggested(*args)
    cache.store(digest, b"", {"suggested": [hit[0], list(hit[1])]})
    return hit


_SUGGESTED: dict = {}


def _ask_suggested(op, n, nrhs, dtype, upper, sm):
    with _SERIAL:
        return _ask_suggested_now(op, n, nrhs, dtype, upper, sm)


#: Held while libmathdx, NVRTC or nvJitLink work: the background builds
#: (:mod:`._fused_build`) and a call on another thread may both compile, and these libraries
#: are not documented as safe to call from two threads at once.
_SERIAL = threading.RLock()


def _ask_suggested_now(op, n, nrhs, dtype, upper, sm):
    t = _tools()
    real, is_complex, _ = _DTYPES[dtype]
    np = t["np"]
    fn = "potrf" if op == "potrf" else "potrs"
    s = t["Solver"](function=fn, size=(n, n, max(nrhs, 1) if fn == "potrs" else 1),
                    precision=np.float64 if real == "double" else np.float32, execution="Block",
                    sm=t["CC"](*sm), fill_mode="upper" if upper else "lower",
                    batches_per_block="suggested",
                    data_type="complex" if is_complex else "real", block_dim="suggested")
    return int(s.batches_per_block), tuple(int(b) for b in s.block_dim)


def _check(result, what):
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise RuntimeError(f"{what} failed with status {err}")
    return result[1:] if isinstance(result, tuple) and len(result) > 1 else None


def compile_kernel(key: FusedKey) -> tuple[bytes, dict]:
    """Compile the kernel for ``key`` to a cubin: ``(cubin, meta)``. Needs no GPU (the
    architecture is ``key.sm``); takes seconds to tens of seconds (on the H200's host: 8 s
    for float64 n = 33, 17 s for complex128 n = 31, 21-26 s for n = 65 to 127). One compile
    at a time per process (:data:`_SERIAL`).

    ``meta["seconds"]`` holds the wall time (s) of each stage: ``libmathdx_potrf`` /
    ``libmathdx_potrs`` (cuSOLVERDx's device function as LTO-IR, one per function the kernel
    calls), ``nvrtc`` (the kernel to LTO-IR), ``fatbin`` (cuSOLVERDx's universal fatbin,
    fetched once per process: 0 after the first kernel) and ``nvjitlink`` (the link to a
    cubin).

    Raises
    ------
    FusedUnavailableError
        The extra is missing.
    RuntimeError
        libmathdx, NVRTC or nvJitLink reject the kernel (the log is in the message).
    """
    with _SERIAL:
        return _compile(key)


def _compile(key: FusedKey) -> tuple[bytes, dict]:
    t = _tools()
    cc = f"{key.sm[0]}{key.sm[1]}"
    need = {"potrf": ("potrf",), "inverse": ("potrs",), "potrf_inverse": ("potrf", "potrs"),
            "solve": ("potrs",)}[key.op]
    symbols, ltoirs, seconds = {}, [], {}
    for fn in need:
        start = time.perf_counter()
        code, sym = t["compile"](_solver(t, fn, key), ("lto", key.sm), "compiled_leading_dim")
        seconds[f"libmathdx_{fn}"] = time.perf_counter() - start
        symbols[fn] = sym
        ltoirs.append((bytes(code.data), sym))
    start = time.perf_counter()
    src = kernel_source(key, symbols)
    nvrtc = t["nvrtc"]
    prog = _check(nvrtc.nvrtcCreateProgram(src.encode(), b"fused.cu", 0, [], []), "nvrtcCreateProgram")[0]
    try:
        opts = [f"-arch=compute_{cc}".encode(), b"-dlto", b"-rdc=true", b"-std=c++17",
                b"-default-device"]
        err = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
        if int(err) != 0:
            size = nvrtc.nvrtcGetProgramLogSize(prog)[1]
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise RuntimeError(f"NVRTC failed on the fused {key.op} kernel:\n{log.decode(errors='replace')}")
        size = _check(nvrtc.nvrtcGetLTOIRSize(prog), "nvrtcGetLTOIRSize")[0]
        kernel_ir = b" " * size
        _check(nvrtc.nvrtcGetLTOIR(prog, kernel_ir), "nvrtcGetLTOIR")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    seconds["nvrtc"] = time.perf_counter() - start
    start = time.perf_counter()
    fat = _universal_fatbin(t)
    seconds["fatbin"] = time.perf_counter() - start
    start = time.perf_counter()
    cubin = _link(t, cc, [(kernel_ir, "fused.ltoir")] + ltoirs, fat)
    seconds["nvjitlink"] = time.perf_counter() - start
    meta = {"kernel": key.kernel_name, "shared_bytes": key.shared_bytes, "block": list(key.block),
            "batches_per_block": key.batches_per_block, "symbols": symbols,
            "seconds": {k: round(v, 4) for k, v in seconds.items()}}
    return cubin, meta


def _universal_fatbin(t) -> bytes:
    """cuSOLVERDx's universal fatbin (the same bytes for every kernel), fetched from libmathdx
    once per process and kept, as nvmath-python's own ``get_universal_fatbin`` keeps it."""
    global _FATBIN
    if _FATBIN is None:
        mathdx = t["mathdx"]
        h = mathdx.cusolverdx_create_descriptor()
        try:
            size = mathdx.cusolverdx_get_universal_fatbin_size(h)
            buf = bytearray(size)
            mathdx.cusolverdx_get_universal_fatbin(h, size, buf)
        finally:
            mathdx.cusolverdx_destroy_descriptor(h)
        _FATBIN = bytes(buf)
    return _FATBIN


_FATBIN = None


def _link(t, cc: str, ltoirs, fat: bytes) -> bytes:
    nvj = t["nvjitlink"]
    opts = [f"-arch=sm_{cc}", "-lto"]
    h = nvj.create(len(opts), opts)
    try:
        try:
            for data, name in ltoirs:
                nvj.add_data(h, nvj.InputType.LTOIR, data, len(data), name)
            nvj.add_data(h, nvj.InputType.FATBIN, fat, len(fat), "cusolverdx_universal.fatbin")
            nvj.complete(h)
        except Exception as exc:
            try:
                size = nvj.get_error_log_size(h)
                log = bytearray(size)
                nvj.get_error_log(h, log)
                msg = log.decode(errors="replace")
            except Exception:
                msg = ""
            raise RuntimeError(f"nvJitLink failed on the fused kernel: {exc}\n{msg}") from exc
        size = nvj.get_linked_cubin_size(h)
        out = bytearray(size)
        nvj.get_linked_cubin(h, out)
        return bytes(out)
    finally:
        nvj.destroy(h)
