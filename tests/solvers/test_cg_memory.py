"""How many vectors the CG of ``gmg`` holds: the previous iteration's ``z`` and ``q`` are
gone before the V-cycle and the operator run, CG iterates in the solver's own warm start,
the output of a solve is made after its first column's solve, and the gradient of a
compliance expands its one vector once. Every change keeps the same bits."""

import tracemalloc
import weakref

import numpy as np
import pytest
import scipy.sparse as sp
from solver_helpers import clamped_cantilever, laplacian_1d, random_rhs

from fesens.fem.model.matrix_free import lattice_system
from fesens.mesh import box
from fesens.objectives import Differentiable
from fesens.physics import Elasticity
from fesens.solvers.iterative import solve_columns
from fesens.solvers.krylov import ArrayOps, PooledOps, pcg
from fesens.solvers.lattice_operator import LatticeStructure
from fesens.solvers.parallel import SlabPool


def spd_system(n: int = 400) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """A 1D Laplacian, its Jacobi inverse diagonal and a right-hand side."""
    A = laplacian_1d(n)
    return A, 1.0 / A.diagonal(), random_rhs(n)


@pytest.mark.parametrize("ops", [ArrayOps(np), PooledOps(SlabPool(2))],
                         ids=["array", "pooled"])
def test_cg_drops_the_previous_z_and_q_before_the_preconditioner_and_the_operator(ops):
    """At every call of the preconditioner, no vector that an earlier call of it or of the
    operator returned is alive, except the residual it is given (``PooledOps`` forms the
    true residual in the product's buffer); at every call of the operator, no earlier
    preconditioned vector is."""
    A, inverse_diagonal, b = spd_system()
    products, preconditioned, violations = [], [], []

    def alive(refs):
        return [ref() for ref in refs if ref() is not None]

    def apply(v):
        violations.extend(("apply", "z") for _ in alive(preconditioned))
        q = A @ v
        products.append(weakref.ref(q))
        return q

    def precondition(r):
        held = [v for v in alive(products) + alive(preconditioned) if v is not r]
        violations.extend(("precondition", "q or z") for _ in held)
        z = inverse_diagonal * r
        preconditioned.append(weakref.ref(z))
        return z

    x, iterations, residual = pcg(apply, precondition, b, None, rtol=1e-10, maxiter=2000,
                                  ops=ops, name="test")
    assert iterations > 20 and residual <= 1e-10
    assert violations == []


def test_cg_iterates_in_the_guess_it_is_given_with_the_same_bits():
    """``overwrite_x0``: the iterate is the guess's own buffer, with the values of CG from
    a copy; a guess that does not help is zeroed in place, as CG from zero; without it the
    guess is untouched."""
    A, inverse_diagonal, b = spd_system()
    ops = PooledOps(SlabPool(2))

    def run(x0, overwrite):
        return pcg(lambda v: A @ v, lambda r: inverse_diagonal * r, b, x0, rtol=1e-10,
                   maxiter=2000, ops=ops, name="test", overwrite_x0=overwrite)

    near = sp.linalg.spsolve(A.tocsc(), b) + 1e-3
    kept = near.copy()
    copied = run(kept, False)
    assert np.array_equal(kept, near)  # not modified
    guess = near.copy()
    owned = run(guess, True)
    assert owned[0] is guess
    assert np.array_equal(owned[0], copied[0]) and owned[1:] == copied[1:]
    far = 1e6 * np.ones_like(b)  # its residual exceeds ||b||: CG starts from zero
    cold = run(None, False)
    assert run(far.copy(), False)[1:] == cold[1:]
    owned_far = run(far, True)
    assert owned_far[0] is far
    assert np.array_equal(owned_far[0], cold[0]) and owned_far[1:] == cold[1:]


@pytest.mark.parametrize("k", [None, 1, 3])
def test_solve_columns_makes_its_output_after_the_first_column_is_solved(k):
    """The first column's solve runs without the output array (8 MB here, traced by
    tracemalloc), and the output holds every column's solution."""
    n = 1_000_000
    rng = np.random.default_rng(1)
    b = rng.standard_normal(n if k is None else (n, k))
    held = []

    def solve_column(column, guess):
        held.append(tracemalloc.get_traced_memory()[0] - start)
        return 2.0 * column, 3, 1e-9

    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        stats = {}
        x = solve_columns(b, None, solve_column, stats)
    finally:
        tracemalloc.stop()
    assert held[0] < n * 8 // 2
    assert x.shape == b.shape and np.array_equal(x, 2.0 * b)
    assert stats == {"last_iterations": 3, "last_residual": 1e-9}


def test_a_matrix_free_gmg_solve_holds_five_fine_vectors_at_its_operator():
    """The most traced memory at an application of the fine operator during a warm-started
    solve, in fine free-dof vectors: CG's residual and search direction (it iterates in
    the solver's own warm start, made before), the smoother's iterate, residual and
    correction, and coarse ones (5.5 in all). It was 9.6 while CG kept its previous z and
    q, copied the warm start and ``solve_columns`` made its output before the solve."""
    # 16 x 8 x 8 cells: coarse vectors an eighth of a fine one
    model = Elasticity(box(16, 8, 8, 2.0, 1.0, 1.0), E=1.0, nu=0.3).fix("left")
    problem = Differentiable(model, solver=("gmg", {"matrix_free": True}))
    x = np.full(model.mesh.n_cells, 0.5)
    problem.solve(scale=x)
    backend = problem.solver
    n = backend._matrix.shape[0]
    b = np.random.default_rng(2).standard_normal(n)
    reference = backend.solve(b)  # CG from the warm start of the first solve
    backend._previous[False] = 0.5 * reference  # a guess that helps: CG iterates in it
    entries = []
    apply = LatticeStructure.apply

    def recording(self, coefficients, v):
        if v.shape[0] == n:
            entries.append(tracemalloc.get_traced_memory()[0] - start)
        return apply(self, coefficients, v)

    try:
        LatticeStructure.apply = recording
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
        again = backend.solve(b)
    finally:
        tracemalloc.stop()
        LatticeStructure.apply = apply
    assert np.allclose(again, reference, rtol=1e-6, atol=1e-12 * np.abs(reference).max())
    assert backend.stats["last_iterations"] >= 3  # preconditioned in the loop too
    vectors = max(entries) / (8 * n)
    assert vectors < 6.0, f"{vectors:.2f} fine vectors at an operator application"


def test_the_gradient_of_a_compliance_expands_its_vector_once(monkeypatch):
    """``cell_bilinear(u, u)`` expands ``u`` onto the lattice once, with the values of two
    distinct vectors."""
    model = clamped_cantilever(3)
    structure = lattice_system(model, model.stiffness_fields()[0]).structure
    u = np.random.default_rng(3).standard_normal(structure.n)
    expanded = []
    expand = LatticeStructure.expand

    def counting(self, v):
        expanded.append(v)
        return expand(self, v)

    monkeypatch.setattr(LatticeStructure, "expand", counting)
    same = structure.cell_bilinear(u, u)
    assert len(expanded) == 1
    assert np.array_equal(same, structure.cell_bilinear(u, u.copy()))
