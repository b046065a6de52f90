"""Matrix-free solves of a model on a lattice of identical first-order cells.

A model solved with ``gmg`` and ``matrix_free=True`` never assembles ``K_ff``: on a
structured quad4 or hex8 mesh whose cells are translates of one another, every cell
matrix is the one reference matrix ``K_ref = Σ_k w_k K⁽ᵏ⁾`` (the physics' folded
components) times the cell's coefficient ``s_e``, and
:class:`~fesens.solvers.lattice_operator.LatticeOperator` applies ``K_ff`` cell by cell.
:func:`lattice_system` builds what that needs from the mesh (the lattice, the corner
order of the cells, the free dofs) once per set of Dirichlet dofs; the solve and its
adjoint are :func:`fesens.ad.lattice.lattice_solve`.

Springs to the ground (``model.spring``) are a constant diagonal beside the cells, which
the operator adds itself (``LatticeStructure(springs=...)``). Refused, with the reason
(:func:`matrix_free_system`): meshes that are not such a lattice, stiffness that is not
one field times constant weights (a per-cell or differentiated ``ν``), boundary matrices
(convection), moved node coordinates (shape sensitivities) and non-zero prescribed values.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.lattice import LatticeSystem
from fesens.errors import SolverError
from fesens.fem.model.structured_grid import structured_grid
from fesens.mesh.structured import require_lattice
from fesens.solvers.lattice_operator import LatticeStructure
from fesens.solvers.multigrid import MATRIX_FREE_CELL_TYPES
from fesens.solvers.registry import solver_class

_INSTEAD = "use solver 'gmg' with matrix_free = false (the assembled fine level)"


def wants_matrix_free(spec, options: dict) -> bool:
    """Whether a solver spec (a backend's name and its options) asks for the matrix-free
    path: the backend offers it and the options switch it on."""
    return bool(options.get("matrix_free", False)) and solver_class(spec).offers_matrix_free


def matrix_free_system(model, weights, *, points=None, prescribed: bool = False
                       ) -> LatticeSystem:
    """The :class:`~fesens.ad.lattice.LatticeSystem` of ``model`` for a solve.

    Parameters
    ----------
    model : LinearModel
    weights : tuple of float or None
        The folded weights of the solve's stiffness fields (``stiffness_fields``).
    points : array, optional
        Moved node coordinates of the solve: refused.
    prescribed : bool
        Whether the solve has non-zero (or differentiated) prescribed values: refused.

    Raises
    ------
    SolverError
        Naming why the solve cannot be matrix-free, and what to use instead.
    """
    if points is not None:
        raise SolverError("the matrix-free multigrid solves on the mesh's own coordinates; "
                          f"shape sensitivities (points=...) need the assembled matrix: {_INSTEAD}")
    if prescribed:
        raise SolverError("the matrix-free multigrid supports zero prescribed values only; "
                          f"for non-zero Dirichlet values {_INSTEAD}")
    return lattice_system(model, weights)


def lattice_system(model, weights) -> LatticeSystem:
    """The lattice system of ``model``'s current Dirichlet set, springs and ``weights``
    (kept on the model while they stay the same)."""
    weights = folded_weights(model, weights)
    if weights is None:
        raise SolverError(
            "the matrix-free multigrid needs the stiffness as one per-cell field times "
            "constant weights (e.g. E with one ν); this solve has several fields (ν per "
            f"cell or differentiated): {_INSTEAD}")
    constrained = model.constrained_dofs
    # the springs are part of the structure: a new spring builds a new system
    key = (tuple(float(w) for w in weights), tuple(sorted(model.springs.items())))
    kept = model.__dict__.get("_lattice_system")
    if kept is None or kept[1] != key or not np.array_equal(kept[0], constrained):
        model._check_free_modes(constrained)
        kept = model.__dict__["_lattice_system"] = (constrained, key,
                                                     _build(model, key))
    return kept[2]


def folded_weights(model, weights: tuple[float, ...] | None) -> tuple[float, ...] | None:
    """The constant weights of the matrix-free stiffness ``w s``: ``weights`` (the first
    of the model's :meth:`stiffness_fields`), ``(1.0,)`` for a model of one component
    matrix (its one field is the coefficient), None when the stiffness is several fields
    (then it cannot be matrix-free)."""
    if weights is None and len(model._reference_cell_matrices()) == 1:
        return (1.0,)
    return weights


def _build(model, key: tuple) -> LatticeSystem:
    mesh = model.mesh
    purpose = "the matrix-free multigrid (gmg with matrix_free = true)"
    if mesh.cell_type not in MATRIX_FREE_CELL_TYPES:
        raise SolverError(f"{purpose} needs first-order cells {MATRIX_FREE_CELL_TYPES}; this "
                          f"mesh has {mesh.cell_type} cells: {_INSTEAD}")
    lattice = require_lattice(mesh, purpose)
    components = model._reference_cell_matrices()
    if any(np.shape(Kk)[0] != 1 for Kk in components):
        raise SolverError(
            f"{purpose} needs one cell matrix for all cells; this model's differ (cells "
            f"that are not translates of one another, or boundary matrices such as "
            f"convection's): {_INSTEAD}")
    dim, nc = mesh.dim, model.n_components
    # the lattice index (x first) of every node, and of every cell's nodes
    position = np.empty(mesh.n_points, dtype=np.int64)
    position[lattice.point_ids] = np.arange(mesh.n_points)
    index = np.stack(np.unravel_index(position, lattice.shape[::-1])[::-1], axis=1)
    cell_index = index[mesh.cells]  # (n_cells, corners, dim)
    base = cell_index.min(axis=1)
    corner = ((cell_index - base[:, None, :]) << np.arange(dim)).sum(axis=2)
    if not np.all(corner == corner[:1]):
        raise SolverError(f"{purpose} needs every cell's nodes in the same corner order; "
                          f"this mesh's cells differ: {_INSTEAD}")
    cells = np.array(lattice.shape) - 1
    if mesh.n_cells != int(np.prod(cells)):
        raise SolverError(f"{purpose} needs the cells to fill the lattice of "
                          f"{'x'.join(map(str, cells))} cells; this mesh has {mesh.n_cells}: "
                          f"{_INSTEAD}")
    strides = np.concatenate([[1], np.cumprod(cells[:-1])])
    cell_order = np.empty(mesh.n_cells, dtype=np.int64)
    cell_order[base @ strides] = np.arange(mesh.n_cells)
    # the reference matrix in the lattice's local numbering (corner-major, x fastest)
    element = sum(w * Kk[0] for w, Kk in zip(key[0], components, strict=True))
    local = (corner[0][:, None] * nc + np.arange(nc)).ravel()  # lattice dof of node dofs
    permutation = np.empty_like(local)
    permutation[local] = np.arange(local.size)
    element = element[np.ix_(permutation, permutation)]
    grid = structured_grid(mesh, nc, model.free_dofs)
    return LatticeSystem(LatticeStructure(grid, element, springs=_spring_rows(model)),
                         cell_order)


def _spring_rows(model) -> tuple[np.ndarray, np.ndarray] | None:
    """The model's springs as ``(rows of K_ff, k)``, None without springs."""
    springs = model.springs
    if not springs:
        return None
    dofs = np.fromiter(springs, dtype=np.int64, count=len(springs))
    model._check_springs_free(dofs)
    values = np.fromiter(springs.values(), dtype=float, count=dofs.size)
    return np.searchsorted(model.free_dofs, dofs), values
