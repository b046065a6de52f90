"""The matrix-free solve on a lattice of identical cells, and its adjoint rule.

``u = A(s)⁻¹ f`` with ``A(s) = Σ_e s_e P_eᵀ K_ref P_e`` applied cell by cell
(:class:`~fesens.solvers.lattice_operator.LatticeOperator`): no global matrix exists,
so the cotangent of the coefficients is contracted per cell directly (no matrix cotangent
is formed):

* ``u = A(s)⁻¹ f``:  ``λ = A⁻ᵀ ū`` (the same multigrid hierarchy; ``λ = u`` for
  compliance), ``f̄ = λ``, ``s̄_e = −λ_eᵀ K_ref u_e`` (summed over right-hand sides);
* ``b_e = a_eᵀ K_ref c_e`` (:func:`cell_bilinear`, what the rule above calls, so that
  second derivatives trace through it): ``ā = A(b̄) c``, ``c̄ = A(b̄) a``.

Coefficients are in the caller's cell order; :class:`LatticeSystem` holds the permutation
to lattice order.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.registry import defvjp, defvjp_joint
from fesens.ad.sparse import SolverHost, self_adjoint
from fesens.ad.tracer import primitive
from fesens.errors import NonFiniteError
from fesens.solvers import LinearSolver
from fesens.solvers.lattice_operator import LatticeOperator, LatticeStructure


class LatticeSystem(SolverHost):
    """A :class:`LatticeStructure` with the caller's cell order, owning its solvers.

    Parameters
    ----------
    structure : LatticeStructure
    cell_order : numpy.ndarray
        ``(n_cells,)``: the caller's cell at each lattice cell.
    """

    def __init__(self, structure: LatticeStructure, cell_order: np.ndarray) -> None:
        super().__init__()
        cell_order = np.asarray(cell_order)
        if cell_order.shape != (structure.n_cells,) or not np.array_equal(
                np.sort(cell_order), np.arange(structure.n_cells)):
            raise ValueError(f"LatticeSystem: cell_order must be a permutation of "
                             f"{structure.n_cells} cells")
        self.structure, self.cell_order = structure, cell_order
        self.shape = structure.shape
        # stored entries a matrix would have (3 neighbours per axis, all components):
        # what the thread rule reads
        self.nnz = structure.n * 3**structure.dim * structure.n_components

    def operator(self, coefficients: np.ndarray) -> LatticeOperator:
        """``A`` for coefficients ``(n_cells,)`` in the caller's cell order."""
        return self.structure.operator(np.asarray(coefficients, dtype=float)[self.cell_order])

    def in_caller_order(self, lattice_values: np.ndarray) -> np.ndarray:
        """Per-cell values ``(n_cells,)`` from lattice order to the caller's."""
        out = np.empty_like(lattice_values)
        out[self.cell_order] = lattice_values
        return out


@primitive
def lattice_solve(system: LatticeSystem, coefficients, f, solver):
    """``u = A(coefficients)⁻¹ f`` for ``f`` ``(n,)`` or ``(n, k)``.

    Parameters
    ----------
    system : LatticeSystem
    coefficients : array
        ``(n_cells,)`` per-cell coefficients (differentiable).
    f : array
        Right-hand side(s) (differentiable).
    solver : str, (str, dict) or LinearSolver
        A backend that factorizes a :class:`LatticeOperator` (``gmg``); a name gets the
        system's own instance, so the hierarchy is kept across solves.
    """
    f = np.asarray(f, dtype=float)
    if not np.all(np.isfinite(f)):
        raise NonFiniteError("the right-hand side of solve contains NaN or infinity")
    backend = system.solver(solver)
    # another thread's factorization must not replace this one before its solve reads it
    with backend.lock, system.thread_limit(backend):
        return _factorized(system, coefficients, backend).solve(f)


@primitive
def _lattice_adjoint_solve(system: LatticeSystem, coefficients, g, solver):
    """``λ = A⁻ᵀ g`` with the hierarchy of ``A(coefficients)`` (linear in ``g``)."""
    backend = system.solver(solver)
    with backend.lock, system.thread_limit(backend):  # as in lattice_solve
        return _factorized(system, coefficients, backend).solve_transpose(
            np.asarray(g, dtype=float))


def _factorized(system: LatticeSystem, coefficients, solver) -> LinearSolver:
    """The system's solver holding ``A(coefficients)`` (set up once per coefficients)."""
    backend = system.solver(solver)
    coefficients = np.asarray(coefficients, dtype=float)
    backend.factorize_once(system, coefficients, lambda: system.operator(coefficients))
    return backend


@primitive
def cell_bilinear(system: LatticeSystem, a, c):
    """``a_eᵀ K_ref c_e`` per cell ``(n_cells,)`` in the caller's order; ``a``, ``c``
    ``(n,)`` or ``(n, k)`` (summed over the columns)."""
    return system.in_caller_order(system.structure.cell_bilinear(
        np.asarray(a, dtype=float), np.asarray(c, dtype=float)))


@primitive
def _apply(system: LatticeSystem, coefficients, x):
    """``A(coefficients) x`` (bilinear; its own rules keep higher orders traced)."""
    return system.operator(coefficients) @ np.asarray(x, dtype=float)


defvjp(_apply, None,
       lambda y, system, s, x: lambda g: cell_bilinear(system, g, x),
       lambda y, system, s, x: lambda g: _apply(system, s, g), uses_ans=False)
defvjp(cell_bilinear, None,
       lambda b, system, a, c: lambda g: _apply(system, g, c),
       lambda b, system, a, c: lambda g: _apply(system, g, a), uses_ans=False)


def _lattice_solve_vjp(argnums, u, system, coefficients, f, solver):
    def vjp(g):
        lam = (u if self_adjoint(g, f, solver)
               else _lattice_adjoint_solve(system, coefficients, g, solver))
        grads = {2: lam}
        if 1 in argnums:
            grads[1] = -cell_bilinear(system, lam, u)
        return tuple(grads[i] for i in argnums)

    return vjp


defvjp_joint(lattice_solve, _lattice_solve_vjp)
defvjp(
    _lattice_adjoint_solve,
    None,
    lambda lam, system, s, g, solver: lambda h: -cell_bilinear(
        system, lam, lattice_solve(system, s, h, solver)),
    lambda lam, system, s, g, solver: lambda h: lattice_solve(system, s, h, solver),
)
