"""The dispatch docs page is assembled per op × batch × preference (CPU: assembly only)."""
from __future__ import annotations

import pytest
import torch

from cusolver_trace.dispatch_docs import generate


def test_page_assembly_on_cpu(tmp_path):
    path = generate(tmp_path, n=8, batch=2, nrhs=2, device="cpu")
    text = path.read_text()
    assert path.name == f"dispatch-cpu-torch{torch.__version__.split('+')[0]}.md"
    for op in ("cholesky", "cholesky_inverse", "cholesky_solve"):
        for b in (1, 2):
            for pref in ("default", "cusolver"):
                assert f"## {op}, batch {b}, preferred_linalg_library = {pref}" in text
    assert "Predicted" in text and f"torch {torch.__version__}" in text


@pytest.mark.gpu
@pytest.mark.gpu_torch_only
def test_page_on_gpu(tmp_path):
    text = generate(tmp_path, n=64, batch=2, nrhs=2, ops=("cholesky_inverse",)).read_text()
    assert "## cholesky_inverse, batch 1, preferred_linalg_library = default" in text
    assert "cusolverDnXpotrs" in text and "cublasDtrsm_v2_64" in text
    assert "[GPU " in text  # per-call GPU time from the API child
    assert "## cholesky," not in text
