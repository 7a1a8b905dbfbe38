"""The project's command-line parser: argparse with one-line usage errors (exit 2) and
options that store a value given once. Used by the ``cusolver-trace`` subcommands
(:mod:`cusolver_trace.cli`) and by ``python3 -m cusolver_trace.tracing``; it sits below both."""
from __future__ import annotations

import argparse
import re
import sys

EXIT_USAGE = 2

_SEEN = "_cusolver_trace_options_seen"   # the namespace attribute _StoreOnce keeps while parsing


class _StoreOnce(argparse._StoreAction):
    """argparse's ``store``, refusing an option given twice: argparse keeps the last value
    and drops the first without a word (``--n 4 --n 8`` would run n = 8 only), and the CLI
    never replaces what a user typed silently. List-valued options take one comma list."""

    def __call__(self, parser, namespace, values, option_string=None):
        seen = getattr(namespace, _SEEN, None)
        if seen is None:
            seen = set()
            setattr(namespace, _SEEN, seen)
        if self.dest in seen:
            hint = (", with one comma-separated list" if getattr(self.type, "is_list", False)
                    else "")
            parser.error(f"{option_string} given more than once (argparse would keep only the "
                         f"last); give it once{hint}")
        seen.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


def _shown(value) -> str:
    """A default as a user would type it (``[1, 2]`` as ``1,2``)."""
    if isinstance(value, (list, tuple)):
        return ",".join(_shown(v) for v in value)
    return str(value)


class DefaultsFormatter(argparse.HelpFormatter):
    """argparse's help, with every option's default said where its help does not say it
    already (``--repeat N  timed samples per method (default: 10)``)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (action.option_strings and not action.required and text != argparse.SUPPRESS
                and action.default not in (None, False, argparse.SUPPRESS)
                and not isinstance(action, (argparse._StoreConstAction, argparse._HelpAction,
                                            argparse._VersionAction))
                and "default" not in text.lower()):
            text = f"{text} (default: {_shown(action.default)})".lstrip()
            text = text.replace("%", "%%").replace("%%(", "%(")
        return text


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (``PROG: error: ...``, with a pointer
    to ``--help``) and exit 2, as every other bad input; an option that stores a value may be
    given once (:class:`_StoreOnce`); an option is written in full (argparse's default takes
    any unambiguous prefix, ``--rep`` for ``--repeat``, and a later option sharing the prefix
    would change what an old command line means)."""

    def __init__(self, *args, **kw):
        kw.setdefault("allow_abbrev", False)
        kw.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kw)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def parse_known_args(self, args=None, namespace=None):
        if namespace is None:
            namespace = argparse.Namespace()
        self._argv = list(sys.argv[1:] if args is None else args)
        try:
            return super().parse_known_args(args, namespace)
        finally:   # also after an error: a caller may catch SystemExit and parse again
            if hasattr(namespace, _SEEN):
                delattr(namespace, _SEEN)

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}{self._dash_hint(message)} (see "
                              f"{self.prog} --help)\n")

    def _dash_hint(self, message) -> str:
        """For argparse's "expected one argument" where the value typed starts with ``-``
        (``--n -5,6``: argparse reads it as an option), how to pass it so that the option's
        own parser judges it."""
        m = re.fullmatch(r"argument ([^:]*): expected one argument", message)
        if m is None:
            return ""
        argv = getattr(self, "_argv", [])
        for opt in m.group(1).split("/"):
            for i, tok in enumerate(argv[:-1]):
                if tok == opt and argv[i + 1].startswith("-") and argv[i + 1] != "--":
                    return (f" (a value that starts with '-' is read as an option: write "
                            f"{opt}={argv[i + 1]})")
        return ""
