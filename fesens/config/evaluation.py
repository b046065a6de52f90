"""The objectives of a resolved config as one traced function of its inputs, through the
analysis the config declares: what ``fesens sensitivity`` differentiates and what every
sample of ``fesens study`` evaluates, so that both give the same value and gradient.

:class:`ConfigEvaluation` is the one dispatch on ``[analysis] type``:

* ``static``: one solve of the model (a nonlinear physics': Newton with the config's
  options, keeping the states of the objective's load factors; with ``[[load_cases]]``,
  one solve of every case on one factorization), each objective read from the solution;
* ``transient``, ``dynamic``: the run's one primitive per objective, its value aggregated
  over the time levels (``over_time``), the gradient its discrete adjoint;
* ``incremental``: the history's one primitive per objective, its value read at one
  increment or aggregated over them (``over_increments``), the gradient its reverse sweep
  over the increments;
* ``harmonic``: one frequency response (a driving frequency at a resonance refused,
  naming its key), each objective ``weight × Σ_ω |j(u(ω))|`` over the driving
  frequencies.

The inputs are the design density (its stiffness the config's material interpolation,
its mass the interpolation's mass where it has one), the load magnitude factors, the node
coordinates and the physics' parameters, each traced or plain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.config.build import build_interpolation, build_model, response, solver_argument
from fesens.config.checks import ConfigError
from fesens.config.increments import (
    INCREMENTAL,
    IncrementObjective,
    aggregate_increments,
    check_increment_objective,
    increment_run,
)
from fesens.config.increments import OBJECTIVE_KEYS as INCREMENT_KEYS
from fesens.config.load_cases import combination, magnitudes
from fesens.config.nonlinear import OBJECTIVE_KEYS as LEVEL_KEYS
from fesens.config.nonlinear import is_nonlinear, load_factors, newton_options
from fesens.config.objectives import response_kind
from fesens.config.resolved import Config
from fesens.config.time_design import (
    aggregate,
    harmonic_objective,
    inertia,
    refusing_resonance,
    run_inputs,
    step_objective,
    time_problem,
)
from fesens.config.time_sections import (
    DEFAULT_TIME_RHO,
    STATIC,
    STEPPED,
    analysis_type,
    angular_frequencies,
    check_step_objective,
)
from fesens.config.time_sections import OBJECTIVE_KEYS as TIME_KEYS
from fesens.fem.model.parameters import SCALE
from fesens.fem.transient import HarmonicAnalysis
from fesens.objectives import Differentiable
from fesens.opt import case_state
from fesens.opt.time_design import mass_factor

#: Keys of an objective table that say how the analysis turns states into one value (time
#: levels, load levels), not what is read from a state.
ANALYSIS_KEYS = (*TIME_KEYS, *LEVEL_KEYS, *INCREMENT_KEYS)


def solve_inputs(config: Config) -> dict:
    """The keywords of the model's ``solve`` that the config gives besides the solver: the
    Newton options of a nonlinear physics (and the load factors whose states its objective
    reads), else the load cases."""
    if is_nonlinear(config.physics_class):
        factors = load_factors(config.data)
        return {"newton": newton_options(config.data),
                **({} if factors is None else {"at_load_factors": factors})}
    return {"load_cases": magnitudes(config.data)}


def analysis_spec(config: Config, table: Mapping) -> dict:
    """An objective table read as the config's analysis reads its ``[objective]``: the
    analysis keys it does not give (``over_time``, ``time_rho``, ``power``;
    ``load_factors``, ``weights``) taken from the config's ``[objective]`` when that has
    the same type, and a stepped analysis' defaults (``over_time = "final"``, ``power =
    1``) otherwise.

    Raises
    ------
    ConfigError
        A kind the analysis cannot evaluate (a stress of a harmonic response, a kind that
        does not depend on the state over time), or a time key of a static analysis.
    """
    spec = dict(table)
    kind = analysis_type(config.data)
    objective = config.data.get("objective") or {}
    if objective.get("type") == spec["type"]:
        for key in ANALYSIS_KEYS:
            if key in objective and key not in spec:
                spec[key] = objective[key]
    if kind == INCREMENTAL:
        check_increment_objective(spec, config.physics_class,
                                  len(config.data["analysis"]["factors"]))
        return spec
    given = [key for key in TIME_KEYS if key in spec]
    if kind not in STEPPED:
        if given:
            raise ConfigError(f"{given[0]} applies to a transient or dynamic analysis, not "
                              f"analysis.type = \"{kind}\"; remove it")
        if kind == "harmonic":
            check_step_objective(response_kind(config.physics, spec["type"]), spec["type"],
                                 linear=True)
        return spec
    check_step_objective(response_kind(config.physics, spec["type"]), spec["type"],
                         nonlinear=is_nonlinear(config.physics_class))
    spec.setdefault("over_time", "final")
    spec.setdefault("power", 1.0)
    if spec["over_time"] == "ks":
        spec.setdefault("time_rho", DEFAULT_TIME_RHO)
    return spec


class ConfigEvaluation:
    """The objectives ``specs`` of ``config`` as one traced function of the inputs, by the
    config's analysis (see the module docstring).

    Parameters
    ----------
    config : Config
        A resolved config.
    specs : sequence of dict
        Checked objective tables (``[objective]``, an ``--objective``'s, a study's
        ``[[outputs]]``), read by :func:`analysis_spec`.
    model : LinearModel or NonlinearModel, optional
        The config's model (default: built from the config).

    Attributes
    ----------
    analysis : str
        ``[analysis] type``.
    model : LinearModel or NonlinearModel
    interpolation : object or None
        The config's material interpolation (``[penalization]``), None without one.
    run : TransientProblem, IncrementalAnalysis or None
        The run of a transient, dynamic or incremental config.
    cases : list of dict
        The ``[[load_cases]]`` tables (empty without).
    """

    def __init__(self, config: Config, specs: Sequence[Mapping], model=None):
        self.config = config
        self.specs = [analysis_spec(config, spec) for spec in specs]
        self.model = build_model(config) if model is None else model
        self.analysis = analysis_type(config.data)
        self.interpolation = build_interpolation(config)
        self.cases = list(config.data.get("load_cases") or [])
        self.run = None
        if self.analysis == STATIC:
            options = {k: v for k, v in solve_inputs(config).items() if k != "load_cases"}
            self._problem = Differentiable(self.model, solver_argument(config), **options)
            self._responses = [response(spec, config) for spec in self.specs]
        elif self.analysis == "harmonic":
            self._omegas = angular_frequencies(config.data)
        elif self.analysis == INCREMENTAL:
            self.run = increment_run(config, self.model)
            self._terms = [IncrementObjective(spec, config, self.model) for spec in self.specs]
        else:
            self.run = time_problem(config, self.model)
            self._terms = [step_objective(spec, config, self.model) for spec in self.specs]

    def values_and_state(self, density, *, loads: Mapping | None = None, points=None,
                         parameters: Mapping | None = None) -> tuple[list, object]:
        """Each objective's value, and the solution of a static analysis (None otherwise).

        Parameters
        ----------
        density : array
            The design density ``(n_cells,)`` (traced or plain); the stiffness scale is
            its interpolation.
        loads : mapping, optional
            ``{load name: factor}`` on the config's load magnitudes (with load cases, on
            each case's); default: the config's loads.
        points : array, optional
            The node coordinates ``(n_points, dim)``; default: the mesh's.
        parameters : mapping, optional
            Values of the physics' parameters (``E``, ``conductivity``, ...; scalars or
            ``(n_cells,)``); default: the config's material.

        Returns
        -------
        values : list
            One per spec: a scalar, or with load cases the values of the cases stacked
            ``(n_cases,)`` (:meth:`combined` makes the config's one value of them).
        state : Solution or None
        """
        inputs = {SCALE.name: (density if self.interpolation is None
                               else self.interpolation(density)), **(parameters or {})}
        if self.analysis == STATIC:
            return self._static(density, loads, points, inputs)
        if self.analysis == INCREMENTAL:
            return [aggregate_increments(self.run.values(term, term_args=term.arguments(
                loads, points), loads=loads, points=points, **inputs), spec)
                for spec, term in zip(self.specs, self._terms, strict=True)], None
        mass = mass_factor(self.interpolation, density)
        if self.analysis == "harmonic":
            return self._harmonic(mass, loads, points, inputs), None
        return [aggregate(self.run.values(term, term_args=term.arguments(loads, points, inputs,
                                                                          density),
                                          loads=loads, points=points,
                                          **{**run_inputs(self.config, mass), **inputs}),
                          self.run.times, spec)
                for spec, term in zip(self.specs, self._terms, strict=True)], None

    def values(self, density, *, loads: Mapping | None = None, points=None,
               parameters: Mapping | None = None) -> list:
        """Each objective's value (see :meth:`values_and_state`)."""
        return self.values_and_state(density, loads=loads, points=points,
                                     parameters=parameters)[0]

    def combined(self, value):
        """The config's one value of an objective's load cases, traced: their weighted sum,
        or with ``objective.combine = "max"`` the largest case's; ``value`` itself without
        load cases."""
        if not self.cases:
            return value
        if combination(self.config.data) == "max":
            return value[int(np.argmax(getval(value)))]
        return sum(case["weight"] * value[i] for i, case in enumerate(self.cases))

    def _static(self, density, loads, points, inputs) -> tuple[list, object]:
        case_loads = magnitudes(self.config.data)
        if case_loads is not None:
            factors = loads or {}
            inputs["load_cases"] = [{name: factors[name] * m if name in factors else m
                                     for name, m in case.items()} for case in case_loads]
        elif loads is not None:
            inputs["loads"] = loads
        if points is not None:
            inputs["points"] = points
        state = self._problem.solve(**inputs)
        if not self.cases:
            return [J(state, density) for J in self._responses], state
        return [np.stack([J(case_state(state, i), density) for i in range(len(self.cases))])
                for J in self._responses], state

    def _harmonic(self, mass, loads, points, inputs) -> list:
        damping = self.config.data["damping"]
        with refusing_resonance(self.config):
            solved = HarmonicAnalysis(self.model).run(
                self._omegas, loads=loads, points=points, density=inertia(self.config, mass),
                damping=(damping["mass"], damping["stiffness"]), **inputs)
        # the weight outside the magnitude: inside, its sign would vanish in |·|
        return [harmonic_objective(spec, self.config, self.model, loads, points)(solved)
                for spec in self.specs]
