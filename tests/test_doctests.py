"""The Examples sections of the package's docstrings, and the ``>>>`` examples of the pages in
``docs/``, run and print what they show (a stale one -- inverse_plan's buffer count after a
default changed -- once went unnoticed because nothing ran them).

A module runs at least one example, or it is listed in :data:`NO_EXAMPLES` with the reason; a
runner that ran nothing fails. A module that cannot be imported fails, unless what is missing
is an optional dependency (an extra of pyproject.toml), and the skip names it. Modules that run
a program on import (``__main__``, the tracing child bootstraps) are left out.
"""
from __future__ import annotations

import doctest
import importlib
import pathlib
import pkgutil

import pytest

import cusolver_trace

ROOT = pathlib.Path(__file__).resolve().parents[1]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

_SKIP = {"cusolver_trace.__main__", "cusolver_trace.tracing.__main__",
         "cusolver_trace.tracing._progboot", "cusolver_trace.tracing._child",
         "cusolver_trace.tracing._hook"}

_GPU = "GPU-only: every function calls cuSOLVER / cuBLAS (tests/test_gpu_*.py run them)"
_PKG = "a package that only re-exports its modules, whose examples run"
_CLI = ("command-line wiring: the CLI tests run every subcommand and docs/cli.md is generated "
        "from these parsers")
_OP = "one op's rows of the registry: tests/test_ops_registry.py runs every op through them"
_RUN = "runs programs or reads logs: tests/test_trace_*.py run them on recorded logs"
_FAM = ("what one family's op modules share: tests/test_ops_registry.py and "
        "tests/test_replay_compare_cpu.py run every op through it")
_CMP = ("a part of compare: the package's examples run compare, and tests/test_compare_*.py "
        "and tests/test_replay_compare_cpu.py drive every part")
#: Modules with no example, each with the reason. A module listed here that gains an example,
#: or one missing here that has none, fails.
NO_EXAMPLES = {
    "cusolver_trace._argparse": "the argparse subclass: tests/test_bad_input.py drives it",
    "cusolver_trace.backends": _PKG,
    "cusolver_trace.backends.cuda_plans": _GPU,
    "cusolver_trace.backends._mirror": _GPU,
    "cusolver_trace.ceiling": "measures a machine's GEMM rate: no fixed output to show",
    "cusolver_trace.cli": _CLI,
    "cusolver_trace.cli.compare": _CLI,
    "cusolver_trace.cli.devices": _CLI,
    "cusolver_trace.cli.info": _CLI,
    "cusolver_trace.cli.sweep": _CLI,
    "cusolver_trace.cli.trace": _CLI,
    "cusolver_trace.cli.warmup": _CLI,
    "cusolver_trace.dispatch_docs": "generates docs/dispatch-*.md from a GPU run",
    "cusolver_trace.ops._cholesky": _FAM,
    "cusolver_trace.ops.cholesky": _OP,
    "cusolver_trace.ops.cholesky_inverse": _OP,
    "cusolver_trace.ops.cholesky_solve": _OP,
    "cusolver_trace.ops.spd_inverse": _OP,
    "cusolver_trace.ops.lu_factor": _OP,
    "cusolver_trace.ops.lu_solve": _OP,
    "cusolver_trace.ops.solve": _OP,
    "cusolver_trace.ops.inv": _OP,
    "cusolver_trace.ops.det": _OP,
    "cusolver_trace.ops.slogdet": _OP,
    "cusolver_trace.ops.eigh": _OP,
    "cusolver_trace.ops.eigvalsh": _OP,
    "cusolver_trace._plan_types": "the plan's record types: tests/test_plans_dag_cpu.py builds "
                                  "and runs plans of them",
    "cusolver_trace.backends.cuda_lu": _GPU,
    "cusolver_trace.backends.cuda_eigh": _GPU,
    "cusolver_trace.backends._fused_launch": _GPU,
    "cusolver_trace.backends._fused_build": "builds kernels with the cuda13-fused extra's "
                                            "compilers: tests/test_fused_background.py fakes them",
    "cusolver_trace.backends._fused_toolchain": "loads the cuda13-fused extra's compilers: "
                                                "tests/test_fused_cpu.py fakes them",
    "cusolver_trace.checks": _PKG,
    "cusolver_trace.checks.flops": "LAWN 41 counts: tests/test_checks.py pins every count",
    "cusolver_trace.compare.notes": _CMP,
    "cusolver_trace.compare.report": _CMP,
    "cusolver_trace.routines": _PKG,
    "cusolver_trace.routines._lu_check": "the LU routines' validation and check: "
                                         "tests/test_lu_routines_cpu.py drives them",
    "cusolver_trace.raw": _PKG,
    "cusolver_trace.raw._load": _GPU,
    "cusolver_trace.raw._status": _GPU,
    "cusolver_trace.raw.cublas": _GPU,
    "cusolver_trace.raw.cublas_modes": _GPU,
    "cusolver_trace.raw.cusolver": _GPU,
    "cusolver_trace.raw.cusolver_eig": _GPU,
    "cusolver_trace.sweep": _PKG,
    "cusolver_trace.tracing": _PKG,
    "cusolver_trace.tracing.kernels": _RUN,
    "cusolver_trace.tracing.profile": _RUN,
    "cusolver_trace.tracing.runner": _RUN,
    "cusolver_trace.versions": "reports this machine's versions: no fixed output to show",
    "cusolver_trace.workflow": "times torch and the replay on each device: no fixed output",
}

#: Optional dependencies (the extras of pyproject.toml): a module that needs one of these may
#: be skipped where it is not installed, and the skip says which extra.
OPTIONAL = {"cupy": "cuda13", "nvmath": "cuda13", "numba": "cuda13-fused",
            "numba_cuda": "cuda13-fused", "cuda": "cuda13", "matplotlib": "plot",
            "sklearn": "data", "nvtx": "nvtx"}

MODULES = sorted(m.name for m in pkgutil.walk_packages(cusolver_trace.__path__, "cusolver_trace.")
                 if m.name not in _SKIP)
PAGES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")
               if ">>> " in p.read_text())


def _import(name):
    """The module, or a skip naming the extra when an optional dependency is missing; the
    project's own import errors fail."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        top = (exc.name or "").split(".")[0]
        if top in OPTIONAL:
            pytest.skip(f"{name} needs {top}, from the optional extra '{OPTIONAL[top]}' "
                        f"(pip install -e '.[{OPTIONAL[top]}]')")
        raise


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = _import(name)
    result = doctest.testmod(module, optionflags=FLAGS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
    if name in NO_EXAMPLES:
        assert result.attempted == 0, (f"{name} now has examples: remove it from NO_EXAMPLES "
                                       f"({NO_EXAMPLES[name]!r})")
    else:
        assert result.attempted > 0, (f"{name} ran no example: give its public functions an "
                                      "Examples section, or list it in NO_EXAMPLES with the reason")


def test_no_examples_lists_only_modules_that_exist():
    assert set(NO_EXAMPLES) <= set(MODULES), sorted(set(NO_EXAMPLES) - set(MODULES))


@pytest.mark.parametrize("page", PAGES)
def test_docs_page_examples(page):
    # a Markdown fence closing a block ends the expected output, as a blank line would
    text = "\n".join("" if ln.strip().startswith("```") else ln
                     for ln in (ROOT / page).read_text().splitlines())
    test = doctest.DocTestParser().get_doctest(text, {}, page, str(ROOT / page), 0)
    runner = doctest.DocTestRunner(optionflags=FLAGS, verbose=False)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0, (page, result)


def test_the_runner_runs_examples():
    """The runner as a whole ran something: a collection that found no module, or modules
    that all ran nothing, fails here."""
    assert len(MODULES) > 20 and len(set(MODULES) - set(NO_EXAMPLES)) > 10
    assert "docs/user-guide.md" in PAGES
