"""Trace what torch's Cholesky family does on the GPU: cuSOLVER / cuBLAS API
calls (from the libraries' own loggers), CUDA kernels and aten ops (from
torch.profiler), as one list of :class:`Event` s (the event model: :mod:`.events`).

* :func:`trace` -- one call, e.g. ``trace(torch.cholesky_inverse, L)``
* :func:`run_traced` -- a whole program with the loggers on
* :func:`parse_log` / :func:`load_log` -- a captured log
* :func:`classify_kernel` -- kernel name -> library
* :func:`summarize` -- calls and GPU time per routine (the summary table)
* :func:`calls_equal` / :func:`diff_traces` -- compare two traces call by call
* :func:`chrome_trace` -- a trace as a Chrome-trace / Perfetto timeline
* :func:`nvtx_range` -- an NVTX range (no-op without the ``nvtx`` package);
  :func:`set_nvtx_recorder` sends the ranges to an object of your own instead

See docs/reading-a-trace.md and docs/tracing-programs.md.
"""
from .events import ApiCall, Event
from .kernels import classify_kernel
from .logparse import ParsedLog, load_log, parse_log
from .model import CallNode, RepeatBlock, Trace, build_tree, fold_repeats
from .profile import trace
from .runner import TraceRun, run_traced
from .summary import Summary, summarize
from .diff import CallDifference, TraceDiff, calls_equal, diff_traces
from .chrome import chrome_trace, validate_chrome_trace, write_chrome_trace
from .nvtx import nvtx_range, set_nvtx_recorder

__all__ = ["trace", "Trace", "parse_log", "load_log", "run_traced", "TraceRun",
           "classify_kernel", "Event", "ApiCall", "ParsedLog", "CallNode", "build_tree",
           "RepeatBlock", "fold_repeats", "Summary", "summarize", "calls_equal", "diff_traces",
           "TraceDiff", "CallDifference", "chrome_trace", "write_chrome_trace",
           "validate_chrome_trace", "nvtx_range", "set_nvtx_recorder"]
