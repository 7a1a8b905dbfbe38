"""Timing sweeps: torch against each method, side by side, checked, against measured ceilings.

:mod:`.measure` runs the points (the public entry points with their checks on, torch
interleaved, LAPACK ratio per result, GFLOP/s with the count named, % of the GEMM
ceiling measured in the same run); :mod:`.report` writes JSON / CSV, tables and plots.
The command is ``cusolver-trace sweep`` (:mod:`cusolver_trace.cli.sweep`).
"""
from .measure import (Case, default_methods, flop_count, make_case, measure_case, method_callable,
                      peak_extra, run_sweep)
from .report import plot_sweep, results_table, sweep_report, write_csv, write_json

__all__ = ["Case", "make_case", "method_callable", "flop_count", "measure_case", "run_sweep",
           "default_methods", "sweep_report", "write_json", "write_csv", "results_table",
           "plot_sweep", "peak_extra"]
