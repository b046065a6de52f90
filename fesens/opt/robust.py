"""The robust formulation: the worst of an eroded, an intermediate and a dilated design.

Three smoothed Heaviside projections of the *same* filtered field ``ρ̃`` with thresholds

    η_e = η + Δη (eroded),   η_i = η (intermediate, the blueprint),   η_d = η − Δη (dilated)

give three designs ``ρ_e ≤ ρ_i ≤ ρ_d`` (elementwise: the projection decreases in its
threshold). The objective is the worst of the three designs' objectives,

    min_x max(f(ρ_e), f(ρ_i), f(ρ_d))   s.t.   V(ρ_d)/V_Ω ≤ V_d*,

solved by the bound formulation of :class:`~fesens.opt.minmax.MinMaxProblem` (three solves
per evaluation, each its own factorization: the three stiffness matrices differ). A member
of the blueprint that the eroded design loses makes the eroded design's objective the worst,
and a gap that the dilated design closes likewise, so the blueprint keeps a minimum size of
both its solid and its void (Sigmund 2009; Wang, Lazarov & Sigmund 2011).

**The volume constraint** is put on the dilated design with a limit ``V_d*`` that is updated
every ``volume_update_every`` iterations (and at the first) so that the blueprint has the
prescribed volume fraction ``f``:

    V_d* = f · V(ρ_d) / V(ρ_i)

at the current design: Wang, Lazarov & Sigmund (2011) constrain the dilated design's volume
and rescale its bound periodically by the ratio of the dilated to the intermediate volume.
Between updates the constraint is an ordinary smooth function of ``x``. The default interval
is 5 iterations: with 20, the 60 × 20 MBB half-beam at β = 32 fell into a two-iteration cycle
of the limit (the blueprint's volume alternating between 0.46 and 0.52) and never converged,
with 5 or 1 it converged.

**Start and stop.** The default start is the uniform design whose blueprint has the volume
fraction at the first iteration's sharpness (:meth:`RobustProblem.initial_design`), so the
first limit holds the blueprint at ``f``. The loop stops only on an iteration whose limit is
current within ``stop.constraint_tol`` (:meth:`RobustProblem.settled`): a design that
settled between two updates may sit at another blueprint volume, and waits for the next.

References
----------
O. Sigmund, "Manufacturing tolerant topology optimization", Acta Mechanica Sinica 25 (2009)
227–239.

F. Wang, B. S. Lazarov, O. Sigmund, "On projection methods, convergence and robust
formulations in topology optimization", Structural and Multidisciplinary Optimization 43
(2011) 767–784.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.fem.model.linear import LinearModel
from fesens.objectives.static import volume
from fesens.opt.continuation import Continuation
from fesens.opt.filters import Filter
from fesens.opt.minmax import MinMaxProblem, case_state
from fesens.opt.projection import Heaviside, Projection
from fesens.opt.responses import Constraint, Evaluation, Response

#: The three designs in the order of :class:`RobustProjection`'s output rows.
DESIGNS = ("eroded", "intermediate", "dilated")
#: Row of the blueprint (what is written out and measured) and of the volume-constrained one.
INTERMEDIATE, DILATED = 1, 2


class RobustProjection(Projection):
    """Three Heaviside projections of one filtered field: eroded, intermediate, dilated.

    Parameters
    ----------
    beta : float or Continuation
        Sharpness ``β`` shared by the three projections (a continuation raises all three).
    eta : float
        Threshold ``η_i`` of the intermediate (blueprint) design.
    delta_eta : float
        ``Δη``: the eroded threshold is ``η + Δη``, the dilated one ``η − Δη``; both must lie
        in ``(0, 1)``.

    Calling it on a filtered field ``(n_cells,)`` gives ``(3, n_cells)``, rows in the order
    of :data:`DESIGNS` (traced).
    """

    name = "robust"

    def __init__(self, beta: float | Continuation = 1.0, eta: float = 0.5,
                 delta_eta: float = 0.1):
        if not 0.0 < delta_eta < min(eta, 1.0 - eta):
            raise ValueError(f"delta_eta = {delta_eta!r} must be in (0, {min(eta, 1.0 - eta):g}) "
                             f"for eta = {eta!r}: the eroded and dilated thresholds η ± Δη "
                             "must lie in (0, 1); e.g. delta_eta = 0.1")
        self.delta_eta = float(delta_eta)
        self.projections = [Heaviside(beta, eta + self.delta_eta), Heaviside(beta, eta),
                            Heaviside(beta, eta - self.delta_eta)]
        self.schedule = self.projections[INTERMEDIATE].schedule
        self.eta = float(eta)

    @property
    def beta(self) -> float:
        return self.projections[INTERMEDIATE].beta

    @property
    def thresholds(self) -> tuple[float, float, float]:
        """``(η_e, η_i, η_d)``."""
        return tuple(p.eta for p in self.projections)

    def update(self, iteration: int) -> None:
        for projection in self.projections:
            projection.update(iteration)

    def __call__(self, rho):
        return np.stack([projection(rho) for projection in self.projections])


class RobustProblem(MinMaxProblem):
    """Minimize the worst of the eroded, intermediate and dilated designs' objectives.

    Parameters
    ----------
    model : LinearModel
        With Dirichlet conditions and named loads set.
    objective : callable
        ``f(state, ρ)`` of one design's solution (e.g. ``lambda s, rho: compliance(s)``),
        applied to each of the three designs.
    volume_fraction : float
        The blueprint's (intermediate design's) volume fraction ``f``; the constraint is on
        the dilated design with the limit of the module docstring.
    projection : RobustProjection
    volume_update_every : int
        Iterations between two updates of the dilated design's volume limit.
    load_cases : list of dict, optional
        Load magnitudes per case (all solved with one factorization per design).
    worst_case_loads : bool
        With two or more ``load_cases``: ``objective`` is one case's and the worst over every
        design and every case (``3 · n_cases`` functions) is minimized; otherwise
        ``objective`` reads the several-case solution (e.g. a weighted sum).
    constraints, reports : optional
        Evaluated on the intermediate design.
    **options
        As :class:`~fesens.opt.problem.DesignProblem` (``interpolation``, ``filter``,
        passive cells, ``solver``, ``design_map``).

    Notes
    -----
    :meth:`evaluate` gives the blueprint's density, volume fraction and solution in
    ``density``, ``volume_fraction`` and ``state``; its ``extras`` hold each design's
    objective (``objective_eroded``, ...), the dilated volume (``volume_dilated``) and its
    current limit (``volume_limit``). Needs an optimizer with ``bound_constraints`` (MMA).
    A resumed run recomputes the dilated volume limit at the design it resumes from.
    """

    def __init__(self, model: LinearModel, objective: Response, *, volume_fraction: float,
                 projection: RobustProjection, volume_update_every: int = 5,
                 load_cases: list[dict] | None = None, worst_case_loads: bool = False,
                 constraints: list[Constraint] | None = None,
                 reports: dict[str, Response] | None = None, **options):
        if not isinstance(projection, RobustProjection):
            raise TypeError(f"a robust problem needs a RobustProjection, got "
                            f"{type(projection).__name__}")
        if options.get("overhang") is not None:
            raise ValueError("a robust problem does not take an overhang filter: the printed "
                             "blueprint of each of the three designs would differ")
        if volume_update_every < 1:
            raise ValueError(f"volume_update_every must be ≥ 1, got {volume_update_every!r}")
        if worst_case_loads and (load_cases is None or len(load_cases) < 2):
            raise ValueError("worst_case_loads needs at least two load cases: the worst of one "
                             "case is that case")
        #: The load cases the worst is taken over besides the designs (None: one function
        #: per design).
        self.cases = load_cases if worst_case_loads else None
        on_blueprint = {c.name: Constraint(c.name, _on_intermediate(c.response), c.limit)
                        for c in constraints or []}
        super(MinMaxProblem, self).__init__(
            model, objective, volume_fraction=volume_fraction, projection=projection,
            load_cases=load_cases, constraints=list(on_blueprint.values()),
            reports={name: _on_intermediate(report) for name, report in (reports or {}).items()},
            **options)
        if type(self.filter).filter_gradient is not Filter.filter_gradient:
            raise ValueError(f"the {self.filter.name} filter replaces the gradient, so the "
                             "three projections would not see one filtered field: use the "
                             "density or Helmholtz filter")
        self.volume_update_every = int(volume_update_every)
        #: The dilated design's volume limit ``V_d*`` (set at the first evaluation).
        self.volume_limit: float | None = None
        self._iteration = 1

    def restore(self, history: list[dict]) -> None:
        """The volume limit the last iteration done held (it changes only at the update
        iterations, which recompute it), and that iteration's number."""
        if history:
            self.volume_limit = float(history[-1]["volume_limit"])
            self._iteration = int(history[-1]["iteration"])

    def initial_design(self) -> np.ndarray:
        """The uniform design whose blueprint has the volume fraction ``f`` at the first
        iteration's sharpness, ``(n_design,)``: a feasible start that the volume limit's
        first update keeps at ``f`` (Wang, Lazarov & Sigmund 2011 start from a feasible
        blueprint; the uniform ``x = f`` projects to a blueprint below or above ``f``).

        Found by bisection on the uniform value: the blueprint's volume increases with it.
        """
        self.projection.update(1)

        def blueprint_volume(value: float) -> float:
            rho = self.designs(np.full(self.n_design, value))[INTERMEDIATE]
            return float(volume(self.model, rho, fraction=True))

        low, high = 0.0, 1.0
        if not blueprint_volume(low) < self.volume_fraction < blueprint_volume(high):
            return super().initial_design()  # passive cells alone decide: no uniform fit
        for _ in range(50):  # to 1e-15 of the unit interval
            middle = 0.5 * (low + high)
            low, high = (middle, high) if blueprint_volume(middle) < self.volume_fraction \
                else (low, middle)
        return np.full(self.n_design, 0.5 * (low + high))

    def settled(self, record: dict, constraint_tol: float) -> bool:
        """Whether the dilated volume limit of ``record``'s iteration is current within
        ``constraint_tol``: ``|f · V(ρ_d)/V(ρ_i) − V_d*| ≤ constraint_tol``. Then a design
        that meets its limit has the blueprint volume ``f`` (to that tolerance); with a stale
        limit it may sit at another (0.27 for 0.3), and the loop waits for the next update."""
        if record["volume"] <= 0.0:  # an empty blueprint: no limit to track (degenerate)
            return True
        current = self.volume_fraction * record["volume_dilated"] / record["volume"]
        return abs(current - record["volume_limit"]) <= constraint_tol

    def update_schedules(self, iteration: int) -> None:
        super().update_schedules(iteration)
        if iteration != self._iteration and (iteration - 1) % self.volume_update_every == 0:
            self.volume_limit = None  # recomputed at the next evaluation
        self._iteration = iteration

    def evaluated_densities(self, x):
        """The three designs ``(3, n_cells)``, rows as :data:`DESIGNS` (traced)."""
        return super().density(x)

    def density(self, x):
        """The blueprint: the intermediate design ``(n_cells,)`` (traced)."""
        return self.evaluated_densities(x)[INTERMEDIATE]

    def designs(self, x: np.ndarray) -> np.ndarray:
        """The three designs ``(3, n_cells)`` at ``x`` (untraced), rows as :data:`DESIGNS`."""
        return np.asarray(getval(self.evaluated_densities(np.asarray(x, dtype=float))))

    def _volume_fraction(self, rho):
        """The dilated design's ``V(ρ_d)/V_Ω`` of the three designs ``(3, n_cells)``, or of
        one design ``(n_cells,)`` (traced)."""
        return volume(self.model, rho[DILATED] if np.ndim(rho) == 2 else rho, fraction=True)

    def solve(self, rho) -> DesignStates:
        """Traced solves of the three designs ``(3, n_cells)``, one state each."""
        return DesignStates(super(RobustProblem, self).solve(rho[k])
                            for k in range(len(DESIGNS)))

    def objective_values(self, state: DesignStates, rho) -> list:
        """``f`` of each design (each load case of each design), traced."""
        if self.cases is None:
            return [self.objective(state[k], rho[k]) for k in range(len(DESIGNS))]
        return [self.objective(case_state(state[k], i), rho[k])
                for k in range(len(DESIGNS)) for i in range(len(self.cases))]

    def volume_excess(self, x: np.ndarray, evaluation: Evaluation):
        """``x' ↦ V(ρ_d(x'))/V_Ω − V_d*`` (for an optimizer's bisection)."""
        return lambda candidate: float(self._volume_fraction(
            self.evaluated_densities(candidate))) - self.volume_limit

    def evaluate(self, x: np.ndarray) -> Evaluation:
        """The worst design's objective and the bound functions of all three, the dilated
        volume constraint against ``V_d*``, the blueprint's density, volume and solution.

        Three forward solves; one backward sweep per bound function and constraint.
        """
        x = np.asarray(x, dtype=float)
        rho = self.designs(x)
        fractions = [float(volume(self.model, rho[k], fraction=True)) for k in (INTERMEDIATE,
                                                                                 DILATED)]
        if self.volume_limit is None:
            self.volume_limit = self.volume_fraction * fractions[1] / fractions[0]
        evaluation = super().evaluate(x)
        # the base constraint is the dilated volume against f: shift it to V_d*
        evaluation.constraints[0] += self.volume_fraction - self.volume_limit
        states = evaluation.state
        per_design = np.reshape(evaluation.bounds, (len(DESIGNS), -1)).max(axis=1)
        evaluation.extras.update({f"objective_{name}": float(value)
                                  for name, value in zip(DESIGNS, per_design, strict=True)})
        evaluation.extras.update(volume_dilated=fractions[1], volume_limit=self.volume_limit)
        evaluation.density = rho[INTERMEDIATE]
        evaluation.volume_fraction = fractions[0]
        evaluation.state = states[INTERMEDIATE]
        return evaluation


class DesignStates(tuple):
    """The solutions of the three designs, in the order of :data:`DESIGNS`."""

    def detached(self) -> DesignStates:
        """The untraced solutions."""
        return DesignStates(state.detached() for state in self)


def _on_intermediate(response: Response) -> Response:
    """``response`` of the intermediate design from the three designs' states and densities."""
    def of_blueprint(states, rho):
        return response(states[INTERMEDIATE], rho[INTERMEDIATE])
    return of_blueprint
