"""The generalized eigen solve (fesens/solvers/eigen.py): shift-invert Lanczos with a fesens
backend's factorization, LOBPCG with AMG, and its errors on bad input."""

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp

from fesens.errors import ModeCountError, NonFiniteError, SingularMassError, ZeroModeError
from fesens.solvers import make_solver
from fesens.solvers.eigen import smallest_eigenpairs
from fesens.solvers.preconditioners import amg_available


def _chain(n, support=True):
    """A fixed-free spring chain (stiffness 1) with masses 1 + i/n: K tridiagonal."""
    main = 2.0 * np.ones(n)
    main[-1] = 1.0
    if not support:
        main[0] = 1.0
    K = sp.diags([-np.ones(n - 1), main, -np.ones(n - 1)], [-1, 0, 1], format="csr")
    M = sp.diags(1.0 + np.arange(n) / n, format="csr")
    return K, M


@pytest.mark.parametrize("method", ["shift-invert", "lobpcg"])
def test_eigenpairs_match_dense_lapack(method):
    if method == "lobpcg" and not amg_available():
        pytest.skip("pyamg is not installed")
    K, M = _chain(300)
    values, modes = smallest_eigenpairs(K, M, 4, method=method, solver="cholmod")
    expected = scipy.linalg.eigh(K.toarray(), M.toarray(), eigvals_only=True)[:4]
    assert np.allclose(values, expected, rtol=1e-8)
    assert np.allclose(modes.T @ (M @ modes), np.eye(4), atol=1e-10)  # mass-normalized
    assert np.allclose(K @ modes, (M @ modes) * values, atol=1e-8 * values.max())


def test_shift_invert_reuses_the_backends_symbolic_analysis():
    K, M = _chain(200)
    backend = make_solver("cholmod")
    smallest_eigenpairs(K, M, 2, solver=backend)
    smallest_eigenpairs(2 * K, M, 2, solver=backend)
    assert backend.stats["n_symbolic"] == 1 and backend.stats["n_numeric"] == 2


def test_k_larger_than_the_free_dofs_is_refused():
    K, M = _chain(80)
    with pytest.raises(ModeCountError, match="k = 81 eigenpairs.*80 free dofs"):
        smallest_eigenpairs(K, M, 81)
    with pytest.raises(ModeCountError, match="k = 0"):
        smallest_eigenpairs(K, M, 0)


def test_nan_in_a_matrix_is_refused():
    K, M = _chain(80)
    K = K.copy()
    K.data[3] = np.nan
    with pytest.raises(NonFiniteError, match="stiffness matrix .* 1 NaN"):
        smallest_eigenpairs(K, M, 2)


def test_singular_mass_is_refused_with_the_massless_dofs():
    K, M = _chain(80)
    M = M.tolil()
    M[5, 5] = 0.0
    M[7, 7] = 0.0
    with pytest.raises(SingularMassError, match=r"2 of 80 free dofs have no mass \(dofs \[5, 7\]"):
        smallest_eigenpairs(K, M.tocsr(), 2)


def test_rigid_body_mode_of_an_unsupported_chain_is_reported():
    K, M = _chain(80, support=False)
    with pytest.raises(ZeroModeError, match="1 zero-energy mode") as info:
        smallest_eigenpairs(K, M, 3)
    assert abs(info.value.values[0]) < 1e-8
    values, _ = smallest_eigenpairs(K, M, 3, allow_zero_modes=True)
    assert abs(values[0]) < 1e-8 and values[1] > 1e-4
