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
