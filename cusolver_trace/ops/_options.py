"""An op's options: :class:`Option` (one keyword of torch's function, its values, its words
on the command line) and :class:`Options` (the validated options of one call)."""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np


@dataclass(frozen=True)
class Option:
    """One option of an op (a keyword of torch's function, such as ``upper`` or ``adjoint``).

    Attributes
    ----------
    name : str
        The keyword, in the Python API (``compare(op, A, upper=True)``) and in reports.
    default : object
        torch's default.
    values : tuple
        The values it takes.
    flag : str
        The command-line flag (``--uplo``); it takes a comma-separated list of words, and
        ``compare`` runs every combination.
    words : mapping of str to value
        What the flag accepts (matched case-insensitively), e.g. ``{"l": False, "lower":
        False, "u": True, "upper": True}``.
    labels : mapping of value to str
        A short label per value for tables (``{False: "L", True: "U"}``).
    help : str
        One line for ``--help``.
    shortcut : (str, value) or None
        A flag of its own for one value (``("--upper", True)``).
    """

    name: str
    default: Any
    values: tuple
    flag: str
    words: Mapping[str, Any]
    labels: Mapping[Any, str]
    help: str
    shortcut: tuple | None = None

    def parse_word(self, text: str):
        """The value of one command-line word.

        Raises
        ------
        ValueError
            Not one of :attr:`words`.
        """
        key = str(text).lower()
        if key not in self.words:
            raise ValueError(f"{self.flag}: expected {', '.join(self.words)}, got {text!r}")
        return self.words[key]

    def validate(self, value, op_name: str):
        """``value`` if it is one of :attr:`values` (bools as bools, never ints).

        Raises
        ------
        TypeError
            A value of another type.
        ValueError
            A value of the right type that the option does not take.
        """
        if isinstance(self.default, bool):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{op_name}: {self.name} must be True or False, got {value!r}")
            return bool(value)
        if value not in self.values:
            raise ValueError(f"{op_name}: option {self.name} must be one of "
                             f"{', '.join(map(repr, self.values))}, got {value!r}")
        return value


def bool_option(name: str, default: bool, flag: str, true_words, false_words, labels,
                help: str, shortcut: tuple | None = None) -> Option:
    """An :class:`Option` taking True / False, with its words on the command line."""
    words = {**{w: True for w in true_words}, **{w: False for w in false_words}}
    return Option(name, default, (False, True), flag, MappingProxyType(words),
                  MappingProxyType(dict(labels)), help, shortcut)


class Options(Mapping):
    """The options of one call, validated against the op (read-only mapping; attribute
    access too: ``opts.upper``).

    Examples
    --------
    >>> from cusolver_trace import ops
    >>> o = ops.get("cholesky").options_from(upper=True)
    >>> o.upper, dict(o)
    (True, {'upper': True})
    """

    __slots__ = ("_values",)

    def __init__(self, values: dict):
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        raise AttributeError("Options are read-only")

    def __getitem__(self, k):
        return self._values[k]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __hash__(self):
        return hash(tuple(sorted(self._values.items())))

    def __eq__(self, other):
        return isinstance(other, Mapping) and dict(self) == dict(other)

    def __repr__(self):
        return "Options(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"
