"""The solver of a model: backend instances per sparsity pattern, AMG's near-null space.

:class:`SolverChoice` is the part of :class:`~fesens.fem.model.linear.LinearModel` that picks and
configures linear solvers: the instances live on the pattern of ``K_ff``
(:meth:`fesens.ad.sparse.SparsePattern.solver`), so plain and traced solves share one symbolic
analysis; a Krylov backend with AMG gets the rigid-body modes of a vector field.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from fesens.errors import MeshError, SolverError
from fesens.fem.model.matrix_free import lattice_system, wants_matrix_free
from fesens.fem.model.rigid_modes import rigid_body_modes
from fesens.fem.model.structured_grid import structured_grid
from fesens.fem.partition.model_part import dof_layout
from fesens.mesh.structured import lattice_of
from fesens.mpi import check_distributes, launched
from fesens.solvers import LinearSolver, make_solver, solver_class
from fesens.solvers.memory import available_bytes, factor_bytes
from fesens.solvers.policy import AutoChoice, distributes, is_auto, model_choice
from fesens.solvers.registry import warn_direct_fallback


class SolverChoice:
    """Mixin of :class:`~fesens.fem.model.linear.LinearModel`: its solvers.

    Uses the model's ``mesh``, ``n_components``, ``free_dofs``, ``operator`` and
    ``default_solver``.

    Attributes
    ----------
    solver_choice : AutoChoice or None
        What ``auto`` last resolved to, with the reason (:meth:`AutoChoice.line`).
    """

    solver_choice: AutoChoice | None = None
    #: Spring supports, global dof -> stiffness: none unless the model grounds dofs by
    #: springs (:class:`~fesens.fem.model.springs.SpringSupports` sets its own), which the
    #: device multigrid cannot take.
    _springs: Mapping[int, float] = MappingProxyType({})
    #: One rank's part of a distributed model (:mod:`fesens.fem.partition.model_part`), else None.
    partition = None

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
        _check_distributes(spec)
        if is_auto(spec) or solver_class(spec).is_direct:
            spec, options = self._checked_choice(spec, options)
        key = (spec, options) if options else spec
        if wants_matrix_free(spec, options):  # no sparsity pattern is ever built
            host = lattice_system(self, self.stiffness_fields()[0])
        else:
            host = self.operator("ff").pattern
        return host.solver(key, lambda backend: self._give_near_nullspace(backend, options))

    def auto_solver(self) -> AutoChoice:
        """The backend ``auto`` stands for on this model, and why
        (:func:`fesens.solvers.policy.model_choice`, from the free unknowns, the mesh and the
        memory).

        PETSc's CG + GAMG under an MPI launch of several ranks; CHOLMOD (or the direct
        fallback of :data:`~fesens.solvers.registry.SOLVER_ALIASES`, with a warning:
        :func:`fesens.solvers.registry.warn_direct_fallback`) in 2D and for 3D problems of at
        most :data:`~fesens.solvers.policy.DIRECT_MAX_3D_UNKNOWNS` free unknowns whose
        estimated factor (:func:`fesens.solvers.memory.factor_bytes`) fits in the available
        memory; otherwise CG with geometric multigrid (``gmg``) on a structured mesh when
        that backend is registered, else CG with AMG (Jacobi without pyamg).
        """
        n, dim = self.free_dofs.size, self.mesh.dim
        choice = model_choice(
            n, dim, factor_bytes(n, dim), available_bytes(), ranks=launched().size,
            on_lattice=lambda: lattice_of(self.mesh) is not None,
            matrix_free_refusal=self._matrix_free_refusal, device_ok=not self._springs)
        if solver_class(choice).is_direct:
            warn_direct_fallback(choice)
        return choice

    def _checked_choice(self, spec: str, options: dict) -> tuple[str, dict]:
        """``auto`` resolved (:meth:`auto_solver`, kept in :attr:`solver_choice`) and a
        direct backend checked against the memory, once per set of Dirichlet dofs."""
        constrained = self.constrained_dofs
        cache = self.__dict__.get("_solver_checks")
        if cache is None or not np.array_equal(cache[0], constrained):
            cache = self.__dict__["_solver_checks"] = (constrained, {})
        done = cache[1]
        if is_auto(spec):
            if spec not in done:
                done[spec] = self.solver_choice = self.auto_solver()
            choice = done[spec]
            spec, options = str(choice), {**choice.options, **options}
        if solver_class(spec).is_direct and spec not in done:
            self._check_factor_fits(spec)
            done[spec] = True
        return spec, options

    def _check_factor_fits(self, name: str) -> None:
        """Refuse up front a direct factorization whose estimate exceeds the memory."""
        n, dim = self.free_dofs.size, self.mesh.dim
        needed, available = factor_bytes(n, dim), available_bytes()
        if available is not None and needed > available:
            raise SolverError(
                f"solver {name!r}: the factorization of {n} unknowns ({dim}D) needs about "
                f"{needed / 2**30:.3g} GiB, more than the {available / 2**30:.3g} GiB "
                "available; use solver 'auto' or an iterative one ('gmg' on a structured "
                "mesh, 'cg' with AMG otherwise), or fewer cells")

    def _matrix_free_refusal(self) -> str | None:
        """Why this model's solves cannot be matrix-free, or None when they can."""
        try:
            lattice_system(self, self.stiffness_fields()[0])
        except (SolverError, MeshError) as exc:
            return str(exc).split(":")[0]
        return None

    def _give_near_nullspace(self, backend: LinearSolver, options: dict) -> None:
        if self._needs_near_nullspace(backend, options):
            backend.near_nullspace = self.near_nullspace()
        if self.partition is not None and self.partition.size > 1:
            if not backend.distributes:
                raise SolverError(f"solver {backend.name!r} cannot solve a distributed model "
                                  "(each rank holds its cells' matrix only); use 'petsc' or "
                                  "'petsc_direct'")
            # the global rows of the local free dofs: PETSc adds the ranks' matrices
            backend.layout = dof_layout(self.partition, self.n_components, self.free_dofs)
        if backend.needs_grid and backend.grid is None and not options.get("matrix_free"):
            # geometric multigrid: where K_ff's rows sit on the mesh's lattice (a
            # matrix-free one reads its lattice operator's grid instead)
            backend.grid = structured_grid(self.mesh, self.n_components, self.free_dofs)

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
        # a distributed model's ranks share one centre: the modes agree on shared nodes
        centre = points.mean(axis=0) if self.partition is None else self.partition.center
        return rigid_body_modes(points, centre)[0][self.free_dofs]

    def _needs_near_nullspace(self, backend: LinearSolver, options: dict) -> bool:
        """Whether ``backend`` builds AMG for this vector field without a given near-null space."""
        return (
            self.n_components == self.mesh.dim
            and backend.reads_near_nullspace
            and "near_nullspace" not in options
        )


def _check_distributes(spec: str) -> None:
    """Under ``mpirun -n N``, refuse a backend that would solve the whole system on every
    rank (``auto`` picks PETSc there)."""
    check_distributes(f"solver {spec!r}", distributes(spec))
