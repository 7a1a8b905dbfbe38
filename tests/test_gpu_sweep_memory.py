"""GPU: the sweep's measured peak memory of each cholesky_inverse method against the
workspace its table row states (:attr:`cusolver_trace.routines.Impl.workspace`)."""
from __future__ import annotations

import pytest

from cusolver_trace import routines, sweep

pytestmark = pytest.mark.gpu


#: The rows whose stated workspace was measured at n = 8192 (float64, the H200; the others
#: are read from the code and hold for large n only roughly: fixed-size blocks' buffers).
MEASURED = ["potrs", "potri", "rec_trtri_lauum", "gemm_lauum", "torch"]


def test_cholesky_inverse_peak_memory_matches_the_stated_workspace():
    n = 8192
    rows = sweep.run_sweep("cholesky_inverse", [n], [1], ["float64"], MEASURED + ["auto"],
                           device="cuda:0", repeat=2, warmup=1, progress=False)
    assert rows and all(r["status"] == "ok" for r in rows), rows
    for r in rows:
        peak = r["peak_extra_n2"]
        assert peak is not None and peak > 0, r
        # torch's own call states nothing in the op's row; the table's torch row states it
        stated = (routines.INVERSE_METHODS["torch"].workspace if r["method"] == "torch"
                  else r["workspace_n2"])
        if stated is not None:
            assert abs(peak - stated) <= 0.1, (r["method"], r["resolved"], peak, stated)
