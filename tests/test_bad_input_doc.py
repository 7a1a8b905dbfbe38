"""docs/bad-input.md is what tests/bad_input_cases.py produces now (regenerate with
``python3 tests/bad_input_cases.py > docs/bad-input.md``)."""
from __future__ import annotations

import pathlib
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="the page records the CPU answers; "
                    "on a GPU machine the default device differs")
def test_bad_input_page_is_current():
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import bad_input_cases
    finally:
        sys.path.pop(0)
    assert (ROOT / "docs" / "bad-input.md").read_text() == bad_input_cases.render()


def test_page_records_no_verdict_that_depends_on_the_lapack_build(monkeypatch):
    """Where torch's LAPACK and scipy's both run (the CPU path is not exact), whether they agree
    in bits depends on the machine: the page says the same for either answer."""
    from types import SimpleNamespace as NS

    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import bad_input_cases
    finally:
        sys.path.pop(0)

    def fake(verdict, exact, n=5):
        side = NS(info=[0])
        return NS(verdict=verdict, path=NS(bitwise=exact), spec={"n": n, "batch": 1},
                  torch=side, replay=side)

    def cell(verdict, exact, n=5):
        monkeypatch.setattr(bad_input_cases, "compare", lambda *a, **k: fake(verdict, exact, n))
        return bad_input_cases._verdict("cholesky", None)

    assert cell("bitwise-equal", False) == cell("within-tolerance", False)
    # an exact path (the same routine on both sides) and an empty input keep their verdict
    assert cell("bitwise-equal", True) != cell("within-tolerance", True)
    assert cell("bitwise-equal", False, n=0) == "`bitwise-equal`"
    assert cell("failed-alike", False) == "`failed-alike`"
