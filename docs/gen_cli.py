"""Write the command-line reference, docs/cli.md, from the parser itself.

    python3 docs/gen_cli.py > docs/cli.md

``tests/test_docs_site.py`` fails when docs/cli.md is not what this prints now.
"""
from __future__ import annotations

import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
WIDTH = 100   # argparse wraps help at COLUMNS - 2: fixed here, so the page does not depend on it


def render() -> str:
    sys.path.insert(0, str(ROOT))
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        from cusolver_trace.cli import COMMANDS, build_parser

        parser = build_parser()
        sub = next(a for a in parser._actions if a.dest == "command")
        parts = ["# Command-line reference", "",
                 "Generated from the parser by `python3 docs/gen_cli.py > docs/cli.md`; "
                 "`cusolver-trace COMMAND --help` prints the same. Exit status of every command: "
                 "0 done / agreement, 1 MISMATCH (or a method that FAILED its check), 2 bad usage "
                 "or input (one line on stderr), 3 an internal error (a bug).", "",
                 "## cusolver-trace", "", "```text", parser.format_help().rstrip(), "```", ""]
        for name in COMMANDS:
            parts += [f"## cusolver-trace {name}", "", "```text",
                      sub.choices[name].format_help().rstrip(), "```", ""]
        return "\n".join(parts)
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


if __name__ == "__main__":
    sys.stdout.write(render())
