"""The solver interface and registry: every backend, same answers, same validation."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from solver_helpers import laplacian_1d, laplacian_2d, random_rhs, relative_error

import fesens.solvers.base as base
import fesens.solvers.cholmod as cholmod_module
import fesens.solvers.registry as registry
from fesens.errors import NonFiniteError, SingularMatrixError, SolverError
from fesens.solvers import (
    SOLVER_ALIASES,
    CholmodSolver,
    FesensPerformanceWarning,
    LinearSolver,
    SuperLUSolver,
    UmfpackSolver,
    available_solvers,
    cholmod_available,
    make_solver,
    register_solver,
    solver_class,
)
from fesens.solvers.base import relative_residual

BACKENDS = available_solvers()
#: Backends that solve a bare matrix (geometric multigrid also needs the grid of its
#: unknowns: tests/solvers/test_solvers_multigrid.py).
BARE = [name for name in BACKENDS if not getattr(solver_class(name), "needs_grid", False)]
STAT_KEYS = {
    "n_symbolic",
    "n_numeric",
    "n_solves",
    "symbolic_seconds",
    "numeric_seconds",
    "solve_seconds",
}


@pytest.fixture(scope="module")
def spd_system():
    """A 2D Laplacian (n = 100), three right-hand sides and the dense solution."""
    A = laplacian_2d(10)
    b = random_rhs(A.shape[0], 3)
    return A, b, np.linalg.solve(A.toarray(), b)


def tolerance(solver: LinearSolver) -> float:
    """Bound on the relative solution error: direct ~eps·cond, iterative rtol·cond."""
    return 1e-10 if solver.is_direct else 1e-7


def test_registry_lists_installed_backends():
    assert {"superlu", "cg", "minres", "gmres"} <= set(BACKENDS)
    assert ("cholmod" in BACKENDS) == cholmod_available()
    assert ("umfpack" in BACKENDS) == UmfpackSolver.available()
    assert "auto" not in BACKENDS and "lu" not in BACKENDS
    direct = [make_solver(name).is_direct for name in BACKENDS]
    assert direct == sorted(direct, reverse=True)  # direct backends first


@pytest.mark.parametrize("name", BACKENDS)
def test_make_solver_sets_registry_name(name):
    solver = make_solver(name)
    assert solver.name == name
    assert set(solver.stats) >= STAT_KEYS


@pytest.mark.parametrize("name", BARE)
@pytest.mark.parametrize("n_rhs", [None, 3])
def test_every_backend_solves_to_its_tolerance(name, n_rhs, spd_system):
    A, b, exact = spd_system
    if n_rhs is None:
        b, exact = b[:, 0], exact[:, 0]
    solver = make_solver(name)
    solver.factorize(A)
    x = solver.solve(b)
    assert x.shape == b.shape and x.dtype == np.float64
    assert relative_residual(A, x, b) <= (1e-12 if solver.is_direct else solver.rtol)
    assert relative_error(x, exact) <= tolerance(solver)
    # A is symmetric: the transpose solve gives the same solution
    assert relative_error(solver.solve_transpose(b), exact) <= tolerance(solver)
    assert solver.stats["n_solves"] == 2


@pytest.mark.parametrize("name", BARE)
@pytest.mark.parametrize("matrix_class", [sp.csr_matrix, sp.csc_matrix, sp.csr_array, sp.csc_array])
def test_sparse_matrices_and_arrays_in_both_formats(name, matrix_class, spd_system):
    A, b, exact = spd_system
    solver = make_solver(name)
    solver.factorize(matrix_class(A))
    assert relative_error(solver.solve(b[:, 0]), exact[:, 0]) <= tolerance(solver)


@pytest.mark.parametrize("name", BARE)
def test_refactorize_with_new_values(name, spd_system):
    A, b, _ = spd_system
    A2 = (2.0 * A + sp.diags(np.linspace(0.0, 1.0, A.shape[0]))).tocsr()
    solver = make_solver(name)
    solver.factorize(A)
    solver.factorize(A2)
    exact = np.linalg.solve(A2.toarray(), b)
    assert relative_error(solver.solve(b), exact) <= tolerance(solver)
    assert solver.stats["n_numeric"] == 2


def test_auto_is_cholmod_when_installed(spd_system):
    if not cholmod_available():
        pytest.skip("scikit-sparse is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solver = make_solver()
    solver.factorize(spd_system[0])  # small: direct (tests/solvers/test_solvers_auto.py)
    assert isinstance(solver.backend, CholmodSolver)
    assert solver.stats["choice"] == "cholmod"


def test_auto_falls_back_to_superlu_and_says_how_to_install_cholmod(monkeypatch, spd_system):
    monkeypatch.setattr(cholmod_module, "_cholmod", None)
    solver = make_solver("auto")  # nothing is said before the choice
    with pytest.warns(FesensPerformanceWarning) as record:
        solver.factorize(spd_system[0])
    assert isinstance(solver.backend, SuperLUSolver)
    assert solver.stats["choice"] == "superlu"
    assert len(record) == 1
    message = str(record[0].message)
    assert message == registry.CHOLMOD_FALLBACK_MESSAGE
    assert "SuperLU" in message and "slower" in message
    assert "apt install libsuitesparse-dev" in message and "pip install scikit-sparse" in message
    assert 'pip install "fesens[cholmod]"' in message
    assert record[0].filename == registry.__file__  # one location: the default filter's "once"


def test_the_fallback_warning_is_shown_once_by_the_default_filter(monkeypatch, spd_system):
    monkeypatch.setattr(cholmod_module, "_cholmod", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's own setting for UserWarning
        for _ in range(3):
            make_solver("auto").factorize(spd_system[0])
    assert [item.category for item in caught] == [FesensPerformanceWarning]


def test_auto_with_cholmod_or_an_iterative_choice_says_nothing(monkeypatch, spd_system):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if cholmod_available():
            make_solver("auto").factorize(spd_system[0])
        monkeypatch.setattr(cholmod_module, "_cholmod", None)
        make_solver("superlu").factorize(spd_system[0])  # asked for by name
        registry.warn_direct_fallback("cholmod")


def test_explicit_cholmod_without_scikit_sparse_raises(monkeypatch):
    monkeypatch.setattr(cholmod_module, "_cholmod", None)
    assert "cholmod" not in available_solvers()
    with pytest.raises(SolverError, match="scikit-sparse.*superlu"):
        make_solver("cholmod")


def test_lu_alias():
    expected = UmfpackSolver if UmfpackSolver.available() else SuperLUSolver
    assert type(make_solver("lu")) is expected


def test_unknown_name_and_option():
    with pytest.raises(ValueError, match="unknown solver 'spooles'.*superlu"):
        make_solver("spooles")
    with pytest.raises(TypeError):
        make_solver("superlu", rtol=1e-8)


def test_register_solver_plugs_in_a_backend(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @register_solver("dense")
    class DenseSolver(base.DirectSolver):
        symmetric = False

        def _factorize(self, A):
            self._dense = A.toarray()

        def _substitute(self, b, transpose):
            return np.linalg.solve(self._dense.T if transpose else self._dense, b)

    assert DenseSolver.name == "dense" and "dense" in available_solvers()
    solver = make_solver("dense")
    solver.factorize(laplacian_1d(5))
    np.testing.assert_allclose(laplacian_1d(5) @ solver.solve(np.ones(5)), np.ones(5))
    for taken in ("dense", *SOLVER_ALIASES):
        with pytest.raises(ValueError, match="already taken"):
            register_solver(taken)(DenseSolver)


def test_register_solver_refuses_a_backend_that_does_not_declare_symmetry(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    class Undeclared(base.DirectSolver):
        def _factorize(self, A):
            pass

        def _substitute(self, b, transpose):
            return b

    with pytest.raises(TypeError, match="must declare the class attribute symmetric"):
        register_solver("undeclared")(Undeclared)
    assert "undeclared" not in available_solvers()


#: What each backend declares: (symmetric, is_direct).
PROPERTIES = {"cholmod": (True, True), "cholmod_lu": (True, True), "superlu": (False, True),
              "umfpack": (False, True),
              "cg": (True, False), "minres": (True, False), "gmres": (False, False),
              "gmg": (True, False), "petsc": (True, False), "petsc_direct": (True, True)}


def test_every_backend_declares_symmetry_and_directness():
    assert set(registry._REGISTRY) == set(PROPERTIES)
    for name, (symmetric, direct) in PROPERTIES.items():
        cls = solver_class(name)
        assert (cls.name, cls.symmetric, cls.is_direct) == (name, symmetric, direct)


@pytest.mark.parametrize("name", [*SOLVER_ALIASES, *BACKENDS])
def test_solver_class_is_the_class_make_solver_makes(name, spd_system):
    """For ``auto``: the direct backend its ``AutoSolver`` picks for a small matrix."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FesensPerformanceWarning)  # auto without CHOLMOD
        solver = make_solver(name)
        if name == "auto":
            solver.factorize(spd_system[0])
            solver = solver.backend
    assert type(solver) is solver_class(name)


def test_solver_class_resolves_auto_without_warning(monkeypatch):
    monkeypatch.setattr(cholmod_module, "_cholmod", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert solver_class("auto") is SuperLUSolver
        assert not solver_class("auto").symmetric
    with pytest.raises(ValueError, match="unknown solver 'spooles'; known solvers: .*"
                                         + ", ".join(SOLVER_ALIASES)):
        solver_class("spooles")


@pytest.mark.parametrize("name", BACKENDS)
def test_matrix_validation(name):
    solver = make_solver(name)
    with pytest.raises(TypeError, match="sparse"):
        solver.factorize(np.eye(3))
    with pytest.raises(ValueError, match=r"square.*\(3, 4\)"):
        solver.factorize(sp.csr_matrix(np.ones((3, 4))))
    with pytest.raises(TypeError, match="real"):
        solver.factorize(sp.eye(3, format="csr", dtype=complex))
    A = laplacian_1d(4)
    A.data[2] = np.nan
    with pytest.raises(NonFiniteError, match="matrix A contains 1 non-finite"):
        solver.factorize(A)


@pytest.mark.parametrize("name", BARE)
def test_rhs_validation(name):
    solver = make_solver(name)
    with pytest.raises(SolverError, match="factorize"):
        solver.solve(np.ones(4))
    solver.factorize(laplacian_1d(4))
    with pytest.raises(ValueError, match=r"\(4,\) or \(4, k\), got \(5,\)"):
        solver.solve(np.ones(5))
    with pytest.raises(ValueError, match=r"got \(4, 2, 1\)"):
        solver.solve_transpose(np.ones((4, 2, 1)))
    with pytest.raises(NonFiniteError, match="b contains 1"):
        solver.solve(np.array([1.0, np.inf, 0.0, 0.0]))
    with pytest.raises(ValueError, match="x0 must have the shape of b"):
        solver.solve(np.ones((4, 2)), x0=np.ones(4))
    with pytest.raises(NonFiniteError, match="x0"):
        solver.solve(np.ones(4), x0=np.full(4, np.nan))
    with pytest.raises(TypeError, match="real"):
        solver.solve(np.ones(4, dtype=complex))


@pytest.mark.parametrize("name", [n for n in BACKENDS if make_solver(n).is_direct])
def test_failed_factorization_leaves_solver_unusable(name):
    solver = make_solver(name)
    solver.factorize(laplacian_1d(6))
    with pytest.raises(SingularMatrixError, match="Dirichlet"):
        solver.factorize(laplacian_1d(6, dirichlet=False))
    with pytest.raises(SolverError, match="factorize"):
        solver.solve(np.ones(6))


@pytest.mark.parametrize("name", BARE)
def test_integer_matrix_and_rhs_are_converted(name):
    A = laplacian_1d(5).astype(np.int64)
    solver = make_solver(name)
    solver.factorize(A)
    x = solver.solve(np.arange(5))
    assert x.dtype == np.float64
    assert relative_residual(A, x, np.arange(5.0)) <= 1e-10


def test_relative_residual_per_column():
    A = sp.eye(2, format="csr")
    b = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    assert relative_residual(A, b, b) == 0.0
    x = b.copy()
    x[1, 2] = 1.0  # third column off by 50 %
    assert relative_residual(A, x, b) == pytest.approx(0.5)
    x[0, 1] = 1e-30  # zero right-hand side but non-zero residual
    assert relative_residual(A, x, b) == np.inf
    assert relative_residual(A, np.zeros((2, 0)), np.zeros((2, 0))) == 0.0
