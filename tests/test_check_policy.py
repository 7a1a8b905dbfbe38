"""One check policy for every routine (docs/user-guide.md, "Checks"): bad array arguments get one
clear error naming the argument; ``check=True`` raises ``NonFiniteError`` for a non-finite factor
or result in every routine. CPU only; the GPU runs the same entry points."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cusolver_trace as ct
from cusolver_trace.errors import NonFiniteError

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# (entry point, which argument the nested list is given as, the call)
ENTRY_POINTS = {
    "potrf": ("A", lambda x: ct.potrf(x)),
    "spd_inverse": ("A", lambda x: ct.spd_inverse(x)),
    "cholesky_inverse": ("L", lambda x: ct.cholesky_inverse(x)),
    "potri": ("L", lambda x: ct.potri(x)),
    "trtri": ("T", lambda x: ct.trtri(x)),
    "potrs(L=...)": ("L", lambda x: ct.potrs(x, np.ones((2, 1)))),
    "potrs(B=...)": ("B", lambda x: ct.potrs(np.eye(2), x)),
}

_number = st.floats(0.5, 4.0)


@st.composite
def ragged(draw):
    """A nested list whose rows differ in length, or with a number where a row should be
    (the n x n matrix first, then one row cut, grown or replaced)."""
    n = draw(st.integers(2, 4))
    rows = [[draw(_number) for _ in range(n)] for _ in range(n)]
    i = draw(st.integers(0, n - 1))
    how = draw(st.sampled_from(("short", "long", "scalar", "nested")))
    if how == "short":
        rows[i] = rows[i][:draw(st.integers(0, n - 1))]
    elif how == "long":
        rows[i] = rows[i] + [1.0]
    elif how == "scalar":
        rows[i] = 1.0
    else:
        rows[i][0] = [1.0, 2.0]
    return rows


@st.composite
def non_numeric(draw):
    """An n x n nested list with at least one entry that is not a float / complex number."""
    n = draw(st.integers(2, 4))
    rows = [[draw(_number) for _ in range(n)] for _ in range(n)]
    if draw(st.booleans()):   # an integer / bool matrix: no floating dtype to keep
        bad = draw(st.sampled_from((True, 4, 0)))
        return [[bad for _ in range(n)] for _ in range(n)]
    # one entry that is no number (an int among floats is a number: NumPy reads float64)
    bad = draw(st.sampled_from(("a", None, object(), b"x", {}, "1.0")))
    rows[draw(st.integers(0, n - 1))][draw(st.integers(0, n - 1))] = bad
    return rows


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@SETTINGS
@given(data=ragged())
def test_ragged_nested_list_is_one_error_naming_the_argument(entry, data):
    name, call = ENTRY_POINTS[entry]
    before = copy.deepcopy(data)
    with pytest.raises(ValueError, match=rf"^{name}: a ragged nested list") as err:
        call(data)
    assert "\n" not in str(err.value)
    assert data == before


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@SETTINGS
@given(data=non_numeric())
def test_non_numeric_nested_list_is_one_error_naming_the_argument(entry, data):
    name, call = ENTRY_POINTS[entry]
    before = repr(data)
    with pytest.raises(TypeError, match=rf"^{name}: a nested list") as err:
        call(data)
    assert "\n" not in str(err.value)
    assert repr(data) == before


def test_unsupported_array_dtype_names_the_argument():
    with pytest.raises(TypeError, match=r"^B: unsupported dtype int64"):
        ct.potrs(np.eye(2), np.ones((2, 1), dtype=np.int64))


def test_a_float_nested_list_still_runs():
    L, info = ct.potrf([[4.0, 2.0], [2.0, 3.0]])
    assert isinstance(L, np.ndarray) and int(info) == 0 and L[0, 0] == 2.0


@pytest.mark.parametrize("batch", [(), (2,)])
def test_potrf_with_inf_on_the_diagonal_raises_nonfinite_as_spd_inverse_does(batch):
    A = np.array([[4.0, 2.0, 0.0], [2.0, 3.0, 0.5], [0.0, 0.5, 2.0]])
    A = np.broadcast_to(A, (*batch, 3, 3)).copy()
    A[..., 0, 0] = np.inf   # LAPACK's dpotrf: info 0 and an Inf factor
    with pytest.raises(NonFiniteError):
        ct.spd_inverse(A)
    with pytest.raises(NonFiniteError):
        ct.potrf(A)   # check=True by default
    L, info = ct.potrf(A, check=False)   # check=False: the factor and info as LAPACK gives them
    assert L.shape == A.shape
