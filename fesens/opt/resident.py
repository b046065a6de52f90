"""A compliance design resident in one array library: on a GPU, the design and the state
stay on the device for the whole optimization.

The general loop (:func:`fesens.opt.loop.optimize`) traces every evaluation on numpy
arrays, so a solve on a device (``gmg`` with ``matrix_free = true, device = "gpu"``)
copies its right-hand side there and the displacement back once per solve. The most
common problem, though, needs no tape at all: the compliance ``C = fᵀ u`` of a linear
model on a lattice with ``K(ρ) = Σ_e c_e s(ρ_e) K_ref`` (SIMP ``s``), the volume, a linear
cone filter and optimality criteria. Its gradient is closed-form (``u`` is its own
adjoint):

    ∂C/∂ρ_e = −c_e s'(ρ_e) u_eᵀ K_ref u_e,      s'(ρ) = p ρ^(p−1) (1 − s_min),

filtered back by ``Wᵀ``. :class:`ResidentCompliance` runs exactly that in the library of
the solver's device (:func:`fesens.solvers.devices.array_library`; numpy for
``device = "numpy"``): the filter by shifted slices (:mod:`fesens.opt.grid_filter`), the
SIMP coefficients, the multigrid-CG solve warm-started from the last displacement,
:meth:`~fesens.solvers.device_multigrid.LatticeMultigrid.cell_energies` and the OC update
(:class:`~fesens.opt.oc.OC` is written against the array API). Per iteration only
scalars cross (the compliance, the volume, CG's and the bisection's tests, the change);
the design comes to the host when a checkpoint or a snapshot is written and at the end,
where the general path evaluates it once more for the outputs
(:meth:`ResidentEvaluation.on_host`).

:func:`resident_refusal` says why a problem does not qualify; the loop then runs the
general path, which gives the same designs (to the solver's tolerance).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from fesens.fem.model.matrix_free import lattice_system
from fesens.objectives.static import compliance
from fesens.opt.filters import DensityFilter, NoFilter
from fesens.opt.interpolation import SIMP
from fesens.opt.oc import OC
from fesens.opt.optimizer_base import Optimizer
from fesens.opt.problem import DesignProblem
from fesens.opt.projection import NoProjection
from fesens.opt.responses import Evaluation
from fesens.solvers.device_multigrid import LatticeMultigrid
from fesens.solvers.devices import array_library, refuse_unless_fits

#: The checkpoint entry (after ``warm_``) of the resident path's last displacement.
RESIDENT_WARM_START = "resident_u"


def compliance_objective(state, rho):
    """The compliance ``fᵀ u`` of ``state`` as a design response ``f(state, ρ)``: the
    objective a config's ``compliance`` builds, which :func:`resident_refusal` knows."""
    return compliance(state)


@dataclass(frozen=True)
class DensityReport:
    """A report ``f(state, ρ)`` of a :class:`DesignProblem` that reads the densities only,
    written against the array API: a resident design calls it with ``state`` None and ``ρ``
    ``(n_cells,)`` in the device's library (the workflow's grayness)."""

    function: Callable

    def __call__(self, state, rho):
        return self.function(state, rho)


def resident_refusal(problem: DesignProblem, optimizer: Optimizer) -> str | None:
    """Why ``problem`` with ``optimizer`` cannot run resident in its solver's device
    library, or None when it can: a :class:`DesignProblem` itself (not a min-max, robust,
    frequency or distributed one), :func:`compliance_objective` alone (no extra
    constraints or load cases; reports only of the densities, each a
    :class:`DensityReport`, as the workflow's grayness), OC, SIMP, no projection,
    design map or overhang filter, no filter or a density filter on a lattice of cells,
    and ``gmg`` with ``matrix_free`` on a device other than ``"cpu"``."""
    if type(problem) is not DesignProblem:
        return f"a {type(problem).__name__} (the resident path: compliance, volume and OC)"
    solver = problem.differentiable.solver
    if solver.device == "cpu" or not solver.matrix_free:
        return "the solver is not the matrix-free multigrid on a device"
    checks = [
        (isinstance(optimizer, OC), f"the optimizer {optimizer.name!r}"),
        (problem.objective is compliance_objective, "an objective other than compliance"),
        (not problem.constraints, "extra constraints"),
        (all(isinstance(report, DensityReport) for report in problem.reports.values()),
         "a report that reads more than the densities"),
        (problem.load_cases is None, "several load cases"),
        (type(problem.interpolation) is SIMP, "an interpolation other than SIMP"),
        (type(problem.projection) is NoProjection, "a projection"),
        (problem.design_map is None and problem.overhang is None,
         "a design map or an overhang filter"),
        (type(problem.filter) is NoFilter or (type(problem.filter) is DensityFilter
                                               and problem.filter.stencil is not None),
         f"the {problem.filter.name} filter (the density filter on a lattice of cells "
         "runs on a device)"),
    ]
    for holds, what in checks:
        if not holds:
            return f"{what} (the resident path: compliance, volume and OC)"
    model = problem.model
    ones = np.ones(model.mesh.n_cells)
    weights, fields = model.stiffness_fields(scale=ones)
    twice = model.stiffness_fields(scale=2.0 * ones)[1]
    if weights is None or len(fields) != 1 or not np.allclose(twice[0], 2.0 * fields[0],
                                                              rtol=1e-14, atol=0.0):
        return "a stiffness that is not one field proportional to the density scale"
    if model.parameter_load(None, scale=ones) is not None:
        return "a load that depends on the density scale"
    return None


@dataclass
class ResidentEvaluation(Evaluation):
    """An :class:`Evaluation` whose arrays live in the resident library and whose
    ``state`` is None; :meth:`on_host` gives the general path's evaluation of the same
    design (what outputs are written from)."""

    host: Callable[[], Evaluation] | None = None

    def on_host(self) -> Evaluation:
        """The evaluation of this design by the general path, on numpy (one more solve,
        made once)."""
        if not isinstance(self.host, Evaluation):
            self.host = self.host()
        return self.host


class ResidentCompliance:
    """The evaluations of a qualifying problem (:func:`resident_refusal`) in one array
    library.

    Parameters
    ----------
    problem : DesignProblem
    xp : module, optional
        The array library; default that of the solver's ``device`` (``"numpy"``: numpy).
        Tests give another (``array_api_strict``).
    """

    def __init__(self, problem: DesignProblem, xp: ModuleType | None = None) -> None:
        solver = problem.differentiable.solver
        self.problem = problem
        self.xp = xp = xp if xp is not None else array_library(
            "cpu" if solver.device == "numpy" else solver.device)
        model, n_cells = problem.model, problem.mesh.n_cells
        weights, fields = model.stiffness_fields(scale=np.ones(n_cells))
        system = lattice_system(model, weights)
        refuse_unless_fits(solver.device, system.structure.n)
        self.multigrid = LatticeMultigrid(system.structure, rtol=solver.rtol,
                                          maxiter=solver.maxiter, smoother=solver.smoother,
                                          degree=solver.degree)
        self.multigrid.prepare(xp)
        load = np.asarray(model.load_vector(None), dtype=float)[model.free_dofs]
        caller = np.empty_like(system.cell_order)
        caller[system.cell_order] = np.arange(n_cells)
        volumes = np.broadcast_to(np.asarray(model.cell_volumes(), dtype=float), (n_cells,))
        passive = problem.solid | problem.void
        # each cell's entry of [x, 0, 1]: its design variable, or 0 (void) or 1 (solid)
        slot = np.where(problem.solid, problem.design.size + 1, problem.design.size)
        slot[problem.design] = np.arange(problem.design.size)
        self._filter = (None if type(problem.filter) is NoFilter else problem.filter.stencil)
        self.f, self.stiffness = xp.asarray(load), xp.asarray(np.asarray(fields[0], float))
        self.lattice_order, self.caller_order = (xp.asarray(system.cell_order),
                                                 xp.asarray(caller))
        self.design, self.slot = xp.asarray(problem.design), xp.asarray(slot)
        self.passive = xp.asarray(passive) if passive.any() else None
        self.solid, self.ends = xp.asarray(problem.solid), xp.asarray([0.0, 1.0])
        self.fractions = xp.asarray(volumes / np.sum(volumes))
        # the volume fraction is linear in ρ: its gradient is made once
        self.volume_gradient = xp.take(self._filtered_back(self.fractions), self.design)
        for report in problem.reports.values():  # one call now makes what it copies here
            report(None, self.fractions)
        self.u = None  # the last displacement, the next solve's start

    # ------------------------------------------------------------ host and device
    def to_device(self, x: np.ndarray):
        """The design ``(n_design,)`` in the resident library (once per run)."""
        return self.xp.asarray(np.asarray(x, dtype=float))

    def to_host(self, x) -> np.ndarray:
        """A resident array as numpy's (for outputs)."""
        if isinstance(x, np.ndarray):
            return x
        if hasattr(x, "get"):  # CuPy's copy to the host
            return x.get()
        return np.from_dlpack(x)

    # ------------------------------------------------------------ the checkpoint
    def warm_start_arrays(self) -> dict[str, np.ndarray]:
        """What the checkpoint keeps of where the next solves start: the problem's
        (:meth:`DesignProblem.warm_start_arrays`) and this path's last displacement, the
        start of its next solve, as ``resident_u`` ``(n_free,)`` (to the host only when a
        checkpoint is written)."""
        arrays = self.problem.warm_start_arrays()
        if self.u is not None:
            arrays[RESIDENT_WARM_START] = self.to_host(self.u)
        return arrays

    def restore_warm_start(self, arrays: dict[str, np.ndarray]) -> None:
        """Put back what :meth:`warm_start_arrays` gave (a resumed run's checkpoint).

        Raises
        ------
        KeyError, ValueError
            The arrays do not fit the problem, or ``resident_u`` is not one value per free
            dof.
        """
        arrays = dict(arrays)
        u = arrays.pop(RESIDENT_WARM_START, None)
        n_free = int(self.f.shape[0])
        if u is not None and np.shape(u) != (n_free,):
            raise ValueError(f"'{RESIDENT_WARM_START}' has shape {np.shape(u)}, but the "
                             f"model has {n_free} free dofs")
        self.problem.restore_warm_start(arrays)
        self.u = None if u is None else self.xp.asarray(np.asarray(u, dtype=float))

    # ------------------------------------------------------------ the density chain
    def _density(self, x):
        """``ρ`` ``(n_cells,)`` as :meth:`DesignProblem.density`: the design in its cells
        (passive solid 1, void 0), filtered, passive cells set again."""
        xp = self.xp
        full = xp.take(xp.concat([x, self.ends]), self.slot)
        rho = full if self._filter is None else self._filter.apply(full)
        if self.passive is not None:
            rho = xp.where(self.passive, xp.astype(self.solid, rho.dtype), rho)
        return rho

    def _filtered_back(self, cell_gradient):
        """The gradient with respect to the design's cells of one with respect to ``ρ``
        (passive cells do not depend on the design)."""
        if self.passive is not None:
            cell_gradient = self.xp.where(self.passive, 0.0, cell_gradient)
        return cell_gradient if self._filter is None else self._filter.transpose(cell_gradient)

    # ------------------------------------------------------------ responses
    def evaluate(self, x) -> ResidentEvaluation:
        """Compliance, volume and their gradients at the resident design ``x``
        ``(n_design,)``: arrays in the resident library, numbers on the host."""
        xp, problem, multigrid = self.xp, self.problem, self.multigrid
        multigrid.rtol = problem.differentiable.solver.rtol  # an adaptive tolerance's
        penalty, minimum = problem.interpolation.parameter, problem.interpolation.minimum
        rho = self._density(x)
        coefficients = self.stiffness * problem.interpolation(rho)
        self.u = u = multigrid.solve(xp.take(coefficients, self.lattice_order), self.f,
                                     self.u)
        # the next design has other coefficients: the hierarchy is not held in between (a
        # snapshot's evaluation on the general path sets up its own)
        multigrid.release()
        objective = float(self.f @ u)
        energies = xp.take(multigrid.cell_energies(u), self.caller_order)
        slope = penalty * rho ** (penalty - 1.0) * (1.0 - minimum)  # s'(ρ)
        gradient = xp.take(self._filtered_back(-(self.stiffness * slope) * energies),
                           self.design)
        fraction = float(self.fractions @ rho)
        extras = {name: float(report(None, rho)) for name, report in problem.reports.items()}
        return ResidentEvaluation(
            objective, gradient, np.array([fraction - problem.volume_fraction]),
            xp.reshape(self.volume_gradient, (1, -1)), rho, fraction, None, extras,
            host=lambda: problem.evaluate(self.to_host(x)))

    def volume_excess(self, x, evaluation: Evaluation) -> Callable:
        """``x' ↦ V(ρ(x'))/V_Ω − f`` around ``x`` (the volume is affine in the design:
        :meth:`DesignProblem.volume_excess`), one scalar to the host per call."""
        excess, slope = float(evaluation.constraints[0]), self.volume_gradient
        return lambda candidate: excess + float(slope @ (candidate - x))


def resident_path(problem: DesignProblem, optimizer: Optimizer) -> ResidentCompliance | None:
    """The resident evaluations of ``problem``, or None where it does not qualify
    (:func:`resident_refusal`)."""
    if resident_refusal(problem, optimizer) is not None:
        return None
    return ResidentCompliance(problem)
