"""Worst-case (min–max) design over load cases: ``min_x max_c f(u_c(x), ρ)``.

The maximum of several smooth functions is not smooth where two of them are equal, which is
where a min–max design ends up. The *bound formulation* makes it smooth again: with one
more variable ``z``,

    min z   s.t.   f(u_c, ρ) ≤ z   for every load case c,   V(ρ)/V_Ω ≤ f_V,

whose constraints are as smooth as ``f``. :class:`MinMaxProblem` gives each case's value
and gradient as :attr:`~fesens.opt.problem.Evaluation.bounds` and
:attr:`~fesens.opt.problem.Evaluation.bound_gradients`; :class:`~fesens.opt.mma.MMA` adds
``z`` (Svanberg's ``a0 = 1``, ``a_c = 1``). Every case comes from one solve with several
right-hand sides (one factorization), and the adjoint of each case reuses it.

Reference: K. Svanberg, "MMA and GCMMA — two methods for nonlinear optimization", KTH note
(2007), §"min-max problems"; for load cases, e.g. the worst-case compliance designs of
Bendsøe & Sigmund, *Topology Optimization* (2003), §2.1.
"""

from __future__ import annotations

from fesens.fem.model.linear import LinearModel
from fesens.objectives.differentiable import State
from fesens.opt.problem import DesignProblem
from fesens.opt.responses import Response


def case_state(state: State, index: int) -> State:
    """The solution of load case ``index`` of a several-case solution (its ``u``, ``f``:
    ``(n_dofs, n_cases)``; the case's ``(n_dofs,)``), traced when ``state`` is."""
    loads = state.load_magnitudes
    return type(state)(state.model, state.u[:, index], state.f[:, index],
                       state.coefficients, state.parameters,
                       loads[index] if isinstance(loads, list) else loads, state.points)


class MinMaxProblem(DesignProblem):
    """Minimize the worst of the load cases' objectives: ``max_c f(state_c, ρ)``.

    Parameters
    ----------
    model : LinearModel
        With Dirichlet conditions and named loads set.
    objective : callable
        ``f(state, ρ)`` of *one* load case's solution (e.g.
        ``lambda s, rho: compliance(s)``), applied to each case.
    load_cases : list of dict
        At least two: the load magnitudes of each case (``{load name: magnitude}``), all
        solved with one factorization.
    **options
        As :class:`~fesens.opt.problem.DesignProblem` (``volume_fraction``,
        ``interpolation``, ``filter``, ``projection``, passive cells, ``constraints``,
        ``solver``, ``reports``).

    Notes
    -----
    :meth:`evaluate` gives ``objective = max_c f_c`` with the gradient of the largest case,
    and all cases in ``bounds``. It needs an optimizer with ``bound_constraints``
    (:class:`~fesens.opt.mma.MMA`); :func:`~fesens.opt.optimize` refuses others.
    """

    bounded = True

    def __init__(self, model: LinearModel, objective: Response, *, load_cases: list[dict],
                 **options):
        if load_cases is None or len(load_cases) < 2:
            count = 0 if load_cases is None else len(load_cases)
            raise ValueError(f"a min–max problem needs at least two load cases, got {count}: "
                             "the worst of one case is that case (use DesignProblem)")
        super().__init__(model, objective, load_cases=load_cases, **options)

    def objective_values(self, state: State, rho) -> list:
        """``[f(state_c, ρ) for each case c]`` (traced)."""
        return [self.objective(case_state(state, i), rho)
                for i in range(len(self.load_cases))]
