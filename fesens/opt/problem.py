"""A density-based design problem: design variables → physical densities → FEM → responses.

``ρ = O(P(F(D x)))`` with an optional design map ``D`` (symmetry, extrusion:
:mod:`fesens.opt.design_maps`), a filter ``F``, a projection ``P`` and an optional overhang
filter ``O`` (:mod:`fesens.opt.overhang`), passive cells fixed to 1 (solid) or 0 (void);
the model's stiffness scale is the interpolation ``s(ρ)`` (SIMP/RAMP). The objective and
extra constraints are functions of the traced solve; the volume constraint
``V(ρ)/V_Ω − f ≤ 0`` is evaluated in its own (solve-free) trace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from fesens.ad.api import value_and_grad, vjp
from fesens.ad.numpy_wrapper import getval, untake
from fesens.errors import SolverError
from fesens.fem.model.linear import LinearModel
from fesens.mpi import SERIAL, Collective
from fesens.objectives.differentiable import Differentiable, State
from fesens.objectives.static import volume
from fesens.opt.design_maps import passive_kinds, refuse_mixed_ties
from fesens.opt.filters import Filter, NoFilter
from fesens.opt.interpolation import SIMP
from fesens.opt.projection import NoProjection
from fesens.opt.responses import Constraint, Evaluation, Response
from fesens.opt.tolerance import AdaptiveTolerance
from fesens.solvers.base import LinearSolver

if TYPE_CHECKING:
    from fesens.fem.partition.mesh_part import MeshPart

#: The prefixes of the checkpoint entries (``warm_`` then these) of the model's solver and
#: of a PDE filter's (:meth:`DesignProblem.warm_start_arrays`).
SOLVER_PREFIXES = ("solver_", "filter_solver_")


class DesignProblem:
    """Density-based topology optimization of a :class:`LinearModel`.

    Parameters
    ----------
    model : LinearModel
        With Dirichlet conditions and named loads set.
    objective : callable
        ``f(state, ρ)``, e.g. ``lambda s, rho: compliance(s)``.
    volume_fraction : float
        Upper bound of ``V(ρ)/V_Ω`` (over all cells, passive ones included).
    interpolation : Interpolation
        SIMP (default), RAMP, ... (:data:`~fesens.opt.interpolation.INTERPOLATIONS`).
    filter : Filter
        NoFilter (default), DensityFilter, SensitivityFilter or HelmholtzFilter.
    projection : Projection
        NoProjection (default) or Heaviside.
    passive_solid, passive_void : numpy.ndarray, optional
        Cell ids held at 1 and 0.
    constraints : list of Constraint
    solver : str, optional
        Solver backend for the forward and adjoint solves.
    load_cases : list of dict, optional
        Load magnitudes per case (all solved with one factorization).
    adaptive_tolerance : AdaptiveTolerance, optional
        Set the iterative solver's ``rtol`` per iteration from the last design change
        (:mod:`fesens.opt.tolerance`); its ``rtol_min`` defaults to the solver's ``rtol``.
        Needs an iterative backend (``gmg``, ``cg``, ...).
    reports : dict of str to callable, optional
        Named responses ``f(state, ρ)`` evaluated (untraced, no gradient) at each design and
        added to :attr:`Evaluation.extras` (e.g. the objective of each load case).
    design_map : CellGroups, optional
        A fixed linear map from the design variables ``(n_reduced,)`` to a field on all
        cells ``(n_cells,)`` (a :class:`~fesens.opt.design_maps.CellGroups`: mirror
        symmetry, extrusion), applied before the filter; passive cells are then set on its
        output, so it must map the passive sets onto themselves. Not with a filter that
        replaces the gradient (the sensitivity filter works on cells, not on the reduced
        variables).
    overhang : callable, optional
        A traced map of the filtered, projected densities ``(n_cells,)`` applied before the
        interpolation (:class:`~fesens.opt.overhang.OverhangFilter`: the printed densities
        of the blueprint); the volume is that of its output.

    Raises
    ------
    PassiveRegionError
        If ``design_map`` ties a passive cell to a cell of another kind (designed, or
        passive of the other type), naming both cells.
    ValueError
        ``constraints`` with a filter that replaces the gradient (the sensitivity filter):
        its smoothed objective gradient is the gradient of no function; the constraints'
        exact gradients beside it let the design checkerboard, and the same smoothing of
        theirs no longer predicts their values (measured on a minimum-volume MBB beam under
        a compliance limit, MMA: 160 checkerboard windows of 2 x 2 cells, and a singular
        stiffness: ``benchmarks/bench_mechanism.py``).
    """

    #: Whether the objective is the largest of several functions (:meth:`objective_values`;
    #: :class:`~fesens.opt.minmax.MinMaxProblem`), each then an :attr:`Evaluation.bounds`.
    bounded = False
    #: This rank's part of the mesh (its cells' global ids) in a distributed problem; None:
    #: the whole mesh (:class:`~fesens.opt.rank_problem.DistributedDesignProblem` sets it).
    part: MeshPart | None = None

    def __init__(
        self,
        model: LinearModel,
        objective: Response,
        *,
        volume_fraction: float,
        interpolation=None,
        filter=None,  # noqa: A002 - the field's name for it
        projection=None,
        passive_solid=None,
        passive_void=None,
        constraints: list[Constraint] | None = None,
        solver="auto",
        load_cases: list[dict] | None = None,
        adaptive_tolerance: AdaptiveTolerance | None = None,
        reports: dict[str, Response] | None = None,
        design_map=None,
        overhang=None,
    ):
        if not 0.0 < volume_fraction <= 1.0:
            raise ValueError(f"volume_fraction must be in (0, 1], got {volume_fraction!r}")
        self.model = model
        self.mesh = model.mesh
        self.objective = objective
        self.volume_fraction = float(volume_fraction)
        self.interpolation = interpolation or SIMP()
        self.filter = filter or NoFilter()
        self.projection = projection or NoProjection()
        self.constraints = list(constraints or [])
        self.load_cases = load_cases
        self.reports = dict(reports or {})
        self.differentiable = Differentiable(model, solver)
        self.adaptive_tolerance = self._checked_tolerance(adaptive_tolerance)
        n = self.mesh.n_cells
        self.solid = np.zeros(n, dtype=bool)
        self.void = np.zeros(n, dtype=bool)
        if passive_solid is not None:
            self.solid[np.asarray(passive_solid, dtype=np.int64)] = True
        if passive_void is not None:
            self.void[np.asarray(passive_void, dtype=np.int64)] = True
        if np.any(self.solid & self.void):
            raise ValueError("a cell cannot be both passive solid and passive void")
        self.design = np.flatnonzero(~(self.solid | self.void))
        if self.design.size == 0:
            raise ValueError("every cell is passive: nothing to design")
        self.design_map, self.overhang = design_map, overhang
        if design_map is not None and \
                type(self.filter).filter_gradient is not Filter.filter_gradient:
            raise ValueError(f"the {self.filter.name} filter replaces the gradient of the "
                             "cells' densities, which a design map's reduced variables do not "
                             "have: use the density or Helmholtz filter with a design map")
        if design_map is not None:
            refuse_mixed_ties(design_map, passive_kinds(self.solid, self.void),
                              self.mesh.cell_centroids)
        if self.constraints and \
                type(self.filter).filter_gradient is not Filter.filter_gradient:
            raise ValueError(f"the {self.filter.name} filter replaces the objective's gradient "
                             f"by one of no function, which the constraints "
                             f"({', '.join(c.name for c in self.constraints)}) cannot share: "
                             "use the density or Helmholtz filter, whose gradients are exact "
                             "for every response")

    def _checked_tolerance(self, tolerance: AdaptiveTolerance | None
                           ) -> AdaptiveTolerance | None:
        """``tolerance`` with ``rtol_min`` defaulting to the solver's ``rtol``; refuses a
        direct solver."""
        if tolerance is None:
            return None
        solver = self.differentiable.solver
        if solver.is_direct or not isinstance(solver.rtol, float):
            raise SolverError(
                f"adaptive_tolerance needs an iterative solver with an rtol, but the solver "
                f"is {solver.name!r}: choose solver 'gmg' (structured mesh) or 'cg' "
                "([solver] backend), or drop adaptive_tolerance ([solver] adaptive_rtol)")
        if tolerance.rtol_min is None:
            tolerance = replace(tolerance, rtol_min=min(solver.rtol, tolerance.rtol_max))
        return tolerance

    def set_solver_rtol(self, rtol: float) -> None:
        """Set the iterative solver's relative residual for the next solves.

        The solver instance (and a multigrid hierarchy it holds) is kept: only the
        stopping test of the following solves changes.
        """
        if not 0.0 < rtol < 1.0:
            raise ValueError(f"rtol = {rtol!r} must be in (0, 1)")
        self.differentiable.solver.rtol = float(rtol)

    @property
    def n_design(self) -> int:
        return self.design.size if self.design_map is None else self.design_map.n_reduced

    @property
    def collective(self) -> Collective:
        """The ranks among which the design is split (:data:`SERIAL`: not split)."""
        return SERIAL

    def gather_design(self, x: np.ndarray) -> np.ndarray:
        """The whole design vector ``(n_design_global,)`` in the global order, on every rank,
        from this rank's part ``x`` (serial: ``x`` itself)."""
        return x

    def design_part(self, x_whole: np.ndarray) -> np.ndarray:
        """This rank's part of the whole design vector ``x_whole`` (serial: ``x_whole``)."""
        return x_whole

    def whole_cells(self, values: np.ndarray) -> np.ndarray:
        """Per-cell values of the whole mesh from this rank's ``(n_cells, ...)`` (serial:
        ``values``)."""
        return values

    def whole_points(self, values: np.ndarray) -> np.ndarray:
        """Per-node values of the whole mesh from this rank's ``(n_points, ...)`` (serial:
        ``values``)."""
        return values

    def whole_state(self, state: State) -> State | None:
        """The (untraced) solution on the whole mesh from this rank's ``state`` (serial:
        ``state``; a distributed problem gives it on rank 0 and None on the others)."""
        return state

    def _total(self, value):
        """A response's value over the whole problem from this rank's (serial: ``value``;
        a distributed problem adds the ranks')."""
        return value

    def _volume_fraction(self, rho):
        """``V(ρ) / V_Ω`` (traced)."""
        return volume(self.model, rho, fraction=True)

    def initial_design(self) -> np.ndarray:
        """The uniform design at the volume fraction, ``(n_design,)``."""
        return np.full(self.n_design, self.volume_fraction)

    def settled(self, record: dict, constraint_tol: float) -> bool:
        """Whether what the problem derives between iterations is current at the design of
        the history ``record`` (one iteration's), within ``constraint_tol``: the loop stops
        only on a settled iteration. Nothing here (a robust problem: its volume limit)."""
        return True

    def restore(self, history: list[dict]) -> None:
        """Take back what the problem derived during a run from the history of the
        iterations done (a resumed run's): here each constraint's; a problem that derives a
        value from earlier iterations restores it too, so the resumed run equals the
        uninterrupted one."""
        for constraint in self.constraints:
            constraint.restore(history)

    def _solver_systems(self) -> dict[str, tuple[LinearSolver, int]]:
        """The solver instances whose state (:meth:`LinearSolver.state`) the checkpoint
        keeps, by the prefix of their entries (:data:`SOLVER_PREFIXES`), each with its
        system's number of unknowns: the model's (its free dofs) and a PDE filter's."""
        systems = {SOLVER_PREFIXES[0]: (self.differentiable.solver, self.model.free_dofs.size)}
        filtering = self.filter.solver_system()
        if filtering is not None:
            systems[SOLVER_PREFIXES[1]] = filtering
        return systems

    def warm_start_arrays(self) -> dict[str, np.ndarray]:
        """Where the next evaluation's solves start, as arrays for the checkpoint: the
        model's (a nonlinear model's Newton warm start; none for a linear model) and the
        state of each solver instance (an iterative solver's last solutions, ``gmg``'s),
        its entries named with its prefix (``solver_forward``, ``filter_solver_forward``)."""
        arrays = dict(self.model.warm_start_arrays())
        for prefix, (solver, _) in self._solver_systems().items():
            arrays.update({prefix + name: value for name, value in solver.state().items()})
        return arrays

    def restore_warm_start(self, arrays: dict[str, np.ndarray]) -> None:
        """Put back what :meth:`warm_start_arrays` gave (a resumed run's checkpoint).

        Raises
        ------
        KeyError, ValueError
            The arrays do not fit the model or its solvers: a solver's entry whose first
            dimension is not its system's number of unknowns, one of a solver this problem
            does not have or that its backend does not keep (each named).
        """
        systems = self._solver_systems()
        states: dict[str, dict[str, np.ndarray]] = {prefix: {} for prefix in systems}
        model_arrays = {}
        for name, value in arrays.items():
            # the longest prefix first: "filter_solver_" also ends in "solver_"
            prefix = next((p for p in sorted(SOLVER_PREFIXES, key=len, reverse=True)
                           if name.startswith(p)), None)
            if prefix is None:
                model_arrays[name] = value
            elif prefix not in systems:
                raise ValueError(f"'{name}' is the state of a filter's solver, but the "
                                 f"{self.filter.name} filter solves nothing")
            elif np.ndim(value) not in (1, 2) or np.shape(value)[0] != systems[prefix][1]:
                raise ValueError(f"'{name}' has shape {np.shape(value)}, but its system has "
                                 f"{systems[prefix][1]} unknowns")
            else:
                states[prefix][name[len(prefix):]] = value
        for prefix, (solver, _) in systems.items():
            solver.load_state(states[prefix])
        self.model.restore_warm_start(model_arrays)

    def update_schedules(self, iteration: int) -> None:
        """Advance the continuation of penalty and projection sharpness, start the
        iteration of each constraint, and let the solvers drop what a checkpoint does not
        keep (:meth:`LinearSolver.drop_unsaved_state`): the iteration boundary, where a
        resumed run starts."""
        for solver, _ in self._solver_systems().values():
            solver.drop_unsaved_state()
        self.interpolation.update(iteration)
        self.projection.update(iteration)
        for constraint in self.constraints:
            constraint.update(iteration)

    def schedules_done(self, iteration: int) -> bool:
        """True once the penalty and projection continuations have reached their final
        values at 1-based ``iteration`` (the loop may then stop on a small change)."""
        schedules = [self.interpolation.schedule, self.projection.schedule]
        return all(s is None or s.done(iteration) for s in schedules)

    # ------------------------------------------------------------ density chain
    def density(self, x):
        """Physical densities ``ρ`` ``(n_cells,)`` from design variables (traced)."""
        if self.design_map is None:
            full = untake(x, self.design, (self.mesh.n_cells,), unique=True) + self.solid
        else:
            full = self._with_passive(self.design_map(x))
        rho = self.projection(self.filter(full))
        if self.overhang is not None:
            rho = self.overhang(rho)
        return self._with_passive(rho)

    def evaluated_densities(self, x):
        """What :meth:`evaluate` solves for and gives its responses and volume: ``ρ`` of
        :meth:`density` (traced; a robust problem's three designs)."""
        return self.density(x)

    def _with_passive(self, values):
        """``values`` ``(n_cells,)`` with passive solid cells 1 and passive void cells 0."""
        if self.solid.any() or self.void.any():
            values = np.where(self.solid, 1.0, np.where(self.void, 0.0, values))
        return values

    def solve(self, rho) -> State:
        """Traced solve with stiffness scale ``s(ρ)``."""
        scale = self.interpolation(rho)
        if self.load_cases is None:
            return self.differentiable.solve(scale=scale)
        return self.differentiable.solve(scale=scale, load_cases=self.load_cases)

    def volume_fraction_of(self, x) -> float:
        """``V(ρ(x)) / V_Ω`` (untraced)."""
        return float(self._volume_fraction(self.density(x)))

    def volume_excess(self, x: np.ndarray, evaluation: Evaluation) -> Callable:
        """``x' ↦ V(ρ(x'))/V_Ω − f`` for an optimizer's bisection around ``x``.

        When ``ρ(x)`` is affine (a linear filter and no projection; passive cells keep it
        affine) so is the volume, and it is evaluated exactly (to round-off) from the
        evaluation at ``x`` as ``g(x) + ∇g·(x' − x)``: a dot product per call instead of a
        filter application (a solve, for the Helmholtz filter).
        """
        if self.filter.linear and self.projection.linear and self.overhang is None:
            excess, slope = evaluation.constraints[0], evaluation.constraint_gradients[0]
            return lambda candidate: excess + self.collective.dot(slope, candidate - x)
        return lambda candidate: self.volume_fraction_of(candidate) - self.volume_fraction

    # ------------------------------------------------------------ evaluation
    def objective_values(self, state: State, rho) -> list:
        """The traced objective ``[f(state, ρ)]``; a :attr:`bounded` problem gives the
        functions whose largest is minimized."""
        return [self.objective(state, rho)]

    def _filtered_gradient(self, x: np.ndarray, gradient: np.ndarray) -> np.ndarray:
        """The filter's post-processed ``gradient`` ``(n_design,)`` at ``x`` ``(n_design,)``.

        A sensitivity filter works on all cells: it gets ``x`` expanded to the cells as
        :meth:`density` does (passive solid 1, passive void 0) and the gradient with 0 on
        passive cells (they contribute ``x_i · 0``), and the design cells' entries are kept.
        Without passive cells both vectors are ``x`` and ``gradient`` themselves. With a
        design map the filter does not replace the gradient (refused otherwise).
        """
        if self.design_map is not None:
            return gradient
        cells_x = self.solid.astype(float)
        cells_x[self.design] = x
        cells_gradient = np.zeros(self.mesh.n_cells)
        cells_gradient[self.design] = gradient
        return self.filter.filter_gradient(cells_x, cells_gradient)[self.design]

    def evaluate(self, x: np.ndarray) -> Evaluation:
        """Objective, constraints and their gradients at ``x``.

        One forward solve (every load case from one factorization); one backward sweep per
        response (reusing the factorization; compliance needs no extra solve at all).
        """
        x = np.asarray(x, dtype=float)
        volume_value, volume_gradient = value_and_grad(
            lambda x: self._volume_fraction(self.evaluated_densities(x)))(x)
        captured = {}

        def responses(x):
            rho = self.evaluated_densities(x)
            state = self.solve(rho)
            captured["state"], captured["rho"] = state, rho
            values = [self._total(value) for value in self.objective_values(state, rho)]
            captured["k"] = len(values)
            values += [self._total(c.response(state, rho)) / c.limit - 1.0
                       for c in self.constraints]
            return np.stack(values)

        values, pullback = vjp(responses, x)
        k, n = captured["k"], len(values)
        gradients = [pullback(np.eye(n)[i]) for i in range(n)]
        objective_gradients = [self._filtered_gradient(x, g) for g in gradients[:k]]
        worst = int(np.argmax(values[:k]))
        constraints = np.concatenate([[volume_value - self.volume_fraction], values[k:]])
        constraint_gradients = np.vstack([volume_gradient[None, :], *gradients[k:]])
        state = captured["state"]
        plain = state.detached()
        extras = {c.name: float((values[k + i] + 1.0) * c.limit)
                  for i, c in enumerate(self.constraints)}
        rho = getval(captured["rho"])
        extras.update({name: float(self._total(report(plain, rho)))
                       for name, report in self.reports.items()})
        bounds = (np.asarray(values[:k], dtype=float), np.vstack(objective_gradients)) \
            if self.bounded else (None, None)
        return Evaluation(float(values[worst]), objective_gradients[worst], constraints,
                          constraint_gradients, rho, float(volume_value),
                          plain, extras, *bounds, collective=self.collective)
