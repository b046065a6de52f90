"""Preconditioner builders: AMG, Jacobi, none."""

import numpy as np
import pytest
import scipy.sparse as sp
from solver_helpers import elasticity_stiffness, laplacian_2d, random_rhs

import fesens.solvers.preconditioners as preconditioners
from fesens.errors import NonFiniteError, SolverError
from fesens.solvers.preconditioners import (
    amg_available,
    check_near_nullspace,
    check_preconditioner,
    default_preconditioner,
    make_preconditioner,
)

needs_pyamg = pytest.mark.skipif(not amg_available(), reason="pyamg not installed")


def test_jacobi_is_the_inverse_absolute_diagonal():
    A = sp.diags([2.0, -4.0, 0.5], format="csr")
    M = make_preconditioner("jacobi", A, symmetric=False)
    np.testing.assert_allclose(M @ np.ones(3), [0.5, 0.25, 2.0])


def test_jacobi_rejects_a_zero_diagonal():
    A = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
    with pytest.raises(SolverError, match="2 zero diagonal entries"):
        make_preconditioner("jacobi", A, symmetric=True)


def test_none_is_none():
    assert make_preconditioner("none", laplacian_2d(3), symmetric=True) is None


@needs_pyamg
@pytest.mark.parametrize("symmetric", [True, False])
def test_amg_v_cycle_approximates_the_inverse(symmetric):
    A = laplacian_2d(12).tocsc()  # converted to CSR for pyamg without a warning
    M = make_preconditioner("amg", A, symmetric=symmetric)
    x = random_rhs(144)
    error = x - M @ (A @ x)
    assert np.linalg.norm(error) < 0.5 * np.linalg.norm(x)


@needs_pyamg
def test_amg_is_symmetric_for_symmetric_matrices():
    M = make_preconditioner("amg", laplacian_2d(8), symmetric=True)
    u, v = random_rhs(64, seed=1), random_rhs(64, seed=2)
    assert u @ (M @ v) == pytest.approx(v @ (M @ u), rel=1e-10)


def test_default_and_validation(monkeypatch):
    assert default_preconditioner() == ("amg" if amg_available() else "jacobi")
    with pytest.raises(ValueError, match="unknown preconditioner 'ilu'"):
        check_preconditioner("ilu")
    monkeypatch.setattr(preconditioners, "pyamg", None)
    assert default_preconditioner() == "jacobi"
    with pytest.raises(SolverError, match="pyamg.*jacobi"):
        check_preconditioner("amg")


@pytest.mark.parametrize(
    ("vectors", "error", "match"),
    [
        (np.ones((5, 3)), ValueError, r"has 6: .*modes\[model\.assembler\.free\]"),
        (np.ones((6, 0)), ValueError, r"shape \(n,\) or \(n, k\), got \(6, 0\)"),
        (np.ones((6, 3, 1)), ValueError, r"got \(6, 3, 1\)"),
        (np.full((6, 3), np.nan), NonFiniteError, "NaN or infinity"),
        (np.ones((6, 3), dtype=complex), TypeError, "real array, got dtype complex128"),
        (np.array(["a"] * 6), TypeError, "real array"),
    ],
)
def test_check_near_nullspace_rejects(vectors, error, match):
    with pytest.raises(error, match=match):
        check_near_nullspace(vectors, 6)


def test_check_near_nullspace_gives_float_columns():
    vectors = check_near_nullspace(np.arange(4), 4)
    assert vectors.shape == (4, 1) and vectors.dtype == np.float64
    assert vectors.flags.c_contiguous


def test_make_preconditioner_checks_the_near_nullspace_rows():
    with pytest.raises(ValueError, match=r"modes\[model\.assembler\.free\]"):
        make_preconditioner("jacobi", laplacian_2d(3), symmetric=True,
                            near_nullspace=np.ones((8, 1)))


@needs_pyamg
@pytest.mark.parametrize("dim", [2, 3])
def test_amg_with_rigid_body_modes_approximates_the_elasticity_inverse_better(dim):
    # one V-cycle on near-rigid errors: AMG built on constants barely reduces them
    K, modes = elasticity_stiffness(dim)
    smooth = modes @ random_rhs(modes.shape[1]) + 1e-3 * random_rhs(K.shape[0])
    errors = {}
    for label, near_nullspace in [("constants", None), ("rigid modes", modes)]:
        M = make_preconditioner("amg", K, symmetric=True, near_nullspace=near_nullspace)
        errors[label] = np.linalg.norm(smooth - M @ (K @ smooth)) / np.linalg.norm(smooth)
    assert errors["rigid modes"] < 0.2 * errors["constants"], errors  # measured: 10x+
