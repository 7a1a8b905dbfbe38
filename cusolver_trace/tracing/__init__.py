"""Trace what torch's Cholesky family does on the GPU: cuSOLVER / cuBLAS API
calls (from the libraries' own loggers), CUDA kernels and aten ops (from
torch.profiler).

* :func:`trace` -- one call, e.g. ``trace(torch.cholesky_inverse, L)``
* :func:`run_traced` -- a whole program with the loggers on
* :func:`parse_log` / :func:`load_log` -- a captured log
* :func:`classify_kernel` -- kernel name -> library

See docs/reading-a-trace.md.
"""
from .kernels import classify_kernel
from .logparse import ApiCall, ParsedLog, load_log, parse_log
from .model import CallNode, RepeatBlock, Trace, build_tree, fold_repeats
from .profile import trace
from .runner import TraceRun, run_traced

__all__ = ["trace", "Trace", "parse_log", "load_log", "run_traced", "TraceRun",
           "classify_kernel", "ApiCall", "ParsedLog", "CallNode", "build_tree",
           "RepeatBlock", "fold_repeats"]
