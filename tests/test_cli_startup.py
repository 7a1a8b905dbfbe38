"""Start-up: ``--help``, ``--version``, ``diff`` and ``trace --from-log`` do not import torch
(nor numpy); ``cusolver-trace --help`` lists every subcommand with the help line its module
registers.
Each check runs in a fresh interpreter (``sys.modules`` after the command), never on time."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "data" / "h200-torch2.11-cu130" / "cusolverdn-api.log"

_PROBE = """
import json, sys
from cusolver_trace.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "heavy": sorted(m for m in ("torch", "numpy", "scipy", "rich")
                                               if m in sys.modules)}), file=sys.stderr)
"""


def _env(**extra):
    return dict(os.environ, PYTHONPATH=str(ROOT), **extra)


def _modules_after(*argv) -> dict:
    p = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True,
                       cwd=ROOT, env=_env(), timeout=120)
    return json.loads(p.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["diff", "--help"],
                                  ["trace", "--help"]], ids=lambda a: " ".join(a))
def test_help_and_version_import_neither_torch_nor_numpy(argv):
    got = _modules_after(*argv)
    assert got["code"] == 0 and "torch" not in got["heavy"] and "numpy" not in got["heavy"], got


def test_diff_and_trace_from_log_do_not_import_torch(tmp_path):
    out = tmp_path / "t.json"
    got = _modules_after("trace", "--from-log", str(LOG), "--json", str(out), "--no-tree")
    assert got["code"] == 0 and "torch" not in got["heavy"], got
    got = _modules_after("diff", str(out), str(out))
    assert got["code"] == 0 and "torch" not in got["heavy"], got


def test_import_cusolver_trace_is_light_and_names_load_on_use():
    code = ("import sys, cusolver_trace as ct\n"
            "assert 'torch' not in sys.modules and 'numpy' not in sys.modules\n"
            "assert ct.__version__ and 'potrf' in dir(ct) and set(ct.__all__) >= {'potrf', 'compare'}\n"
            "import cusolver_trace.compare, cusolver_trace.replay, cusolver_trace.versions\n"
            "assert callable(ct.compare) and callable(ct.replay) and callable(ct.versions)\n"
            "from cusolver_trace import compare, routines\n"
            "assert callable(compare) and routines.potrf is ct.potrf\n"
            "assert ct.NonFiniteError.__module__ == 'cusolver_trace.errors'\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env=_env(), timeout=120)
    assert p.returncode == 0, p.stderr


def test_a_stand_in_for_a_public_name_is_kept_and_removed(monkeypatch):
    import cusolver_trace as ct

    real = ct.compare
    monkeypatch.setattr(ct, "compare", lambda *a, **k: "stand-in")
    import cusolver_trace.compare  # noqa: F401  (binding the submodule does not hide it)
    assert ct.compare() == "stand-in"
    monkeypatch.undo()
    assert ct.compare is real


def test_the_help_lines_are_the_modules_own():
    from cusolver_trace.cli import COMMANDS, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    registered = {c.dest: c.help for c in sub._choices_actions}
    assert registered == COMMANDS


def test_every_option_says_what_it_does_and_its_default():
    import argparse

    from cusolver_trace.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        for action in p._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            text = p.formatter_class(prog="x")._get_help_string(action)
            assert text, f"{name} {action.option_strings[0]} has no help"
            if action.default not in (None, False, argparse.SUPPRESS) and not action.required \
                    and not isinstance(action, argparse._StoreConstAction):
                assert "default" in text.lower(), f"{name} {action.option_strings[0]}: {text}"


def test_info_json_takes_a_path_like_every_other_json(tmp_path, capsys):
    from cusolver_trace.cli import main

    out = tmp_path / "info.json"
    assert main(["info", "--json", str(out)]) == 0
    assert "packages" in json.loads(out.read_text())
    capsys.readouterr()
    assert main(["info", "--json", "-"]) == 0
    assert "packages" in json.loads(capsys.readouterr().out)
