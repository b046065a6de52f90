"""The solver of a model: backend instances per sparsity pattern, AMG's near-null space.

:class:`SolverChoice` is the part of :class:`~fesens.fem.model.LinearModel` that picks and
configures linear solvers: the instances live on the pattern of ``K_ff``
(:meth:`fesens.ad.sparse.SparsePattern.solver`), so plain and traced solves share one symbolic
analysis; a Krylov backend with AMG gets the rigid-body modes of a vector field.
"""

from __future__ import annotations

import numpy as np

from fesens.fem.rigid_modes import rigid_body_modes
from fesens.fem.structured_grid import structured_grid
from fesens.solvers import IterativeSolver, LinearSolver, make_solver


class SolverChoice:
    """Mixin of :class:`~fesens.fem.model.LinearModel`: its solvers.

    Uses the model's ``mesh``, ``n_components``, ``assembler``, ``operator`` and
    ``default_solver``.
    """

    def solver(self, spec=None, **options) -> LinearSolver:
        """The model's solver instance for ``spec`` on the current pattern (kept, so the
        symbolic analysis is done once and shared by plain and traced solves).

        Parameters
        ----------
        spec : str, (str, dict) or LinearSolver, optional
            Backend name (default :attr:`default_solver`), with options, or an instance
            (returned as it is).
        **options
            Backend options (with a name).

        A Krylov backend with the AMG preconditioner gets :meth:`near_nullspace` as its
        ``near_nullspace`` unless the options give one (``near_nullspace=None`` keeps
        pyamg's constant vectors).
        """
        if isinstance(spec, LinearSolver):
            return spec
        if isinstance(spec, tuple):
            spec, options = spec[0], {**spec[1], **options}
        spec = spec or self.default_solver
        key = (spec, options) if options else spec
        return self.operator("ff").pattern.solver(
            key, lambda backend: self._give_near_nullspace(backend, options))

    def _give_near_nullspace(self, backend: LinearSolver, options: dict) -> None:
        if self._needs_near_nullspace(backend, options):
            backend.near_nullspace = self.near_nullspace()
        if getattr(backend, "needs_grid", False) and backend.grid is None:
            # geometric multigrid: where K_ff's rows sit on the mesh's lattice
            backend.grid = structured_grid(self.mesh, self.n_components, self.assembler.free)

    def with_near_nullspace(self, solver="auto"):
        """``solver`` for matrices ``K_ff`` of the current Dirichlet set, given the model's
        near-null space when it needs one.

        Parameters
        ----------
        solver : str, (str, dict) or LinearSolver
            Backend name, with options, or an instance.

        Returns
        -------
        str, (str, dict) or LinearSolver
            For a Krylov backend with the AMG preconditioner whose options do not give
            ``near_nullspace``, in a vector-field model: a new instance holding
            :meth:`near_nullspace`. Otherwise ``solver`` itself.
        """
        if isinstance(solver, LinearSolver):
            return solver
        name, options = (solver, {}) if isinstance(solver, str) else solver
        backend = make_solver(name, **options)
        if not self._needs_near_nullspace(backend, options):
            return solver
        backend.near_nullspace = self.near_nullspace()
        return backend

    def near_nullspace(self) -> np.ndarray | None:
        """The near-null space of ``K_ff`` for AMG: the rigid-body modes on the free dofs.

        Returns
        -------
        numpy.ndarray or None
            ``(n_free, 3)`` in 2D, ``(n_free, 6)`` in 3D for a vector field with one
            component per dimension (rotations about the centroid of the points); None for
            a scalar field, whose near-null space (the constants) is pyamg's default.
        """
        if self.n_components != self.mesh.dim:
            return None
        points = self.mesh.points
        return rigid_body_modes(points, points.mean(axis=0))[0][self.assembler.free]

    def _needs_near_nullspace(self, backend: LinearSolver, options: dict) -> bool:
        """Whether ``backend`` builds AMG for this vector field without a given near-null space."""
        return (
            self.n_components == self.mesh.dim
            and isinstance(backend, IterativeSolver)
            and backend.preconditioner == "amg"
            and "near_nullspace" not in options
        )
