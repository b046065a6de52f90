"""Time-dependent analyses built from a config: the run of a transient or dynamic config
(:class:`~fesens.fem.transient.TransientProblem`, :class:`~fesens.fem.transient.DynamicProblem`)
with its inputs, the objective per time level and its time aggregate (``[objective]
over_time``), and the design problems of ``fesens optimize``
(:mod:`fesens.opt.time_design`): a time aggregate of a run, or the dynamic compliance of a
harmonic response.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from fesens.ad.numpy_wrapper import getval, stop_gradient
from fesens.config.checks import ConfigError
from fesens.config.nonlinear import newton_options
from fesens.config.objectives import objective_kind, response_kind
from fesens.config.resolved import Config
from fesens.config.time_sections import (
    DEFAULT_TIME_RHO,
    analysis_type,
    angular_frequencies,
    check_step_objective,
    load_histories,
    support_history,
    time_levels,
)
from fesens.errors import ResonanceError
from fesens.fem.model.parameters import SCALE
from fesens.fem.model.solution import Solution
from fesens.fem.transient import DynamicProblem, TransientProblem, time_scheme
from fesens.opt.time_design import HarmonicDesignProblem, TransientDesignProblem


def inertia(config: Config, density=1.0):
    """The coefficient of the time derivative (``[material]`` key of the physics' fragment,
    default 1) times the design density (mass and heat capacity follow the material
    linearly)."""
    key = config.physics_class.config.inertia
    return config.data["material"].get(key, 1.0) * density


def time_problem(config: Config, model) -> TransientProblem:
    """The :class:`TransientProblem` (first time derivative) or :class:`DynamicProblem`
    (second) of a stepped config."""
    time = config.data["time"]
    solver = config.data["solver"]
    backend, options = solver["backend"], dict(solver["options"])
    scheme_options = {key: time[key] for key in time_scheme(time["scheme"]).options
                      if key in time}
    common = {"times": time_levels(time), "scheme": time["scheme"],
              "lumped": time["lumped"], "max_states": time.get("max_states"),
              "solver": backend, "solver_options": options, **scheme_options}
    if analysis_type(config.data) == "dynamic":
        return DynamicProblem(model, **common)
    return TransientProblem(model, newton=newton_options(config.data), **common)


def run_inputs(config: Config, density=1.0) -> dict:
    """The keywords of the problem's ``states`` and ``values`` that the config gives: the
    initial state, the loads' and the supports' histories (a dynamic run's supports start
    from rest), the mass coefficient, the damping."""
    data, cls = config.data, config.physics_class
    initial = data["initial"]
    inputs = {"histories": load_histories(data), "dirichlet_history": support_history(data)}
    if analysis_type(data) == "dynamic":
        damping = data["damping"]
        return {**inputs, "u0": initial[cls.field_name], "v0": initial.get("velocity", 0.0),
                "density": inertia(config, density),
                "damping": (damping["mass"], damping["stiffness"])}
    return {**inputs, "T0": initial[cls.field_name], "density": 1.0,
            "heat_capacity": inertia(config, density)}


def _response(spec: dict, config: Config, *, linear: bool = False) -> Callable:
    """``f(state, ρ)`` of the objective's kind (``linear``: a functional linear in the
    field, as a harmonic response needs)."""
    kind = response_kind(config.physics, spec["type"])
    check_step_objective(kind, spec["type"], linear=linear)
    return objective_kind(kind).build(spec, config)


class StepObjective:
    """``j(u, t, F, *solve)``: the objective's value at one time level, raised to
    ``power``; its kind evaluated on the physics' solution of the level's field ``u``
    ``(n_dofs,)`` and load ``f(t) = Σ_L φ_L(t) F[:, L]`` (``F`` ``(n_dofs, n_loads)``).

    A kind that reads more of a solve than its field and load (a stress, a stored energy:
    its ``reads``) gets the solve's inputs as further arguments, ``solve = (points, ρ,
    *parameters)`` (the node coordinates or None, the design density or None, and the
    model's parameters in their declared order, None where not given), so that the run's
    discrete adjoint pulls its value back to them; :meth:`arguments` gives the
    ``term_args`` of :meth:`~fesens.fem.transient.TransientProblem.values` in that order.
    The level's state is built as a static solve builds its own
    (:meth:`~fesens.fem.model.linear.LinearModel.solve`): the physics'
    ``solution_class`` with the coefficients and parameters of the solve.

    Parameters
    ----------
    spec : dict
        The resolved ``[objective]`` table.
    config : Config
    model : LinearModel or NonlinearModel
        The run's model (a kind that reads the solution needs a linear one: the config
        refuses the others, :func:`~fesens.config.time_sections.check_step_objective`).
    """

    def __init__(self, spec: dict, config: Config, model):
        self.value = _response(spec, config)
        self.reads = bool(objective_kind(response_kind(config.physics, spec["type"])).reads)
        self.model, self.power = model, spec.get("power", 1.0)
        self.histories = load_histories(config.data)
        self.load_names = tuple(model.loads)
        self.parameter_names = tuple(model.parameters)

    def _factors(self, t: float) -> np.ndarray:
        return np.array([np.interp(t, *self.histories[name]) if name in self.histories
                         else 1.0 for name in self.load_names])

    def arguments(self, loads: dict | None = None, points=None,
                  parameters: dict | None = None, density=None) -> tuple:
        """The ``term_args``: ``(F,)``, and for a kind that reads the solution ``(F,
        points, density, *parameters)`` (see the class); ``loads`` the load magnitudes,
        ``parameters`` the run's keywords (those that are not the model's parameters are
        left out), each traced or not."""
        F = load_matrix(self.model, loads, points)
        if not self.reads:
            return (F,)
        given = parameters or {}
        return (F, points, density, *(given.get(name) for name in self.parameter_names))

    def __call__(self, u, t, F, *solve):
        model = self.model
        f = F @ self._factors(t) if self.load_names else np.zeros(model.dofmap.n_dofs)
        if self.reads:
            points, density, *values = solve
            parameters = {name: v for name, v in zip(self.parameter_names, values,
                                                     strict=True) if v is not None}
            state = model.solution_class(model, u, f, model.coefficients(**parameters),
                                         parameters, None, points)
            j = self.value(state, density)
            if getval(j) == 0.0:
                # what a solution's reads give is a norm of the state (a stress aggregate,
                # a stored energy): 0 only at rest (the first level of a run from rest),
                # its minimum, where 0 is a subgradient and the chain rule through the
                # norm's root would divide by zero
                j = stop_gradient(j)
        else:
            j = self.value(Solution(model, u, f, [], {}), None)
        return j if self.power == 1.0 else j ** self.power


def step_objective(spec: dict, config: Config, model) -> StepObjective:
    """The objective's value at one time level (:class:`StepObjective`)."""
    return StepObjective(spec, config, model)


def aggregate(values, times: np.ndarray, spec: dict):
    """The objective over the time levels: ``final`` (the last level's value), ``integral``
    (trapezoidal ``∫ j dt``) or ``ks`` (``max + log Σ exp(ρ (j − max)) / ρ``, an upper
    bound of the largest value within ``log(N + 1) / ρ``)."""
    over = spec.get("over_time", "final")
    if over == "final":
        return values[-1]
    if over == "integral":
        return np.sum(0.5 * (values[1:] + values[:-1]) * np.diff(times))
    rho = spec.get("time_rho", DEFAULT_TIME_RHO)
    top = float(np.max(getval(values)))
    return top + np.log(np.sum(np.exp(rho * (values - top)))) / rho


def load_matrix(model, loads: dict | None, points):
    """``F`` ``(n_dofs, n_loads)``: each named load's vector times its magnitude (traced
    when they are)."""
    loads = loads or {}
    columns = []
    for name in model.loads:
        one_hot = {other: 0.0 for other in model.loads}
        one_hot[name] = loads.get(name, 1.0)
        columns.append(model.load_vector(one_hot, points))
    if not columns:
        return np.zeros((model.dofmap.n_dofs, 0))
    return np.stack(columns, axis=1)


def harmonic_functional(spec: dict, config: Config, model, loads: dict | None = None,
                        points=None) -> Callable:
    """``j(u)``: the objective's kind on a real field ``u`` with the load amplitude ``f``
    (``f · u`` for a compliance, a value at a point), linear in ``u``, without the
    objective's ``weight`` (:func:`harmonic_objective` applies it outside the magnitude);
    ``f`` of the load magnitudes ``loads`` and node coordinates ``points`` (traced when
    they are; default: the model's)."""
    value = _response({**spec, "weight": 1.0} if "weight" in spec else spec, config,
                      linear=True)
    f = model.load_vector(loads, points)
    return lambda u: value(Solution(model, u, f, [], {}), None)


def harmonic_weight(spec: dict) -> float:
    """The objective's ``weight`` (1 for a kind without one): a harmonic objective is
    ``weight × Σ_ω |j(u(ω))|``. Inside the magnitude a weight of −1 would vanish in
    ``|·|``, and the objective would be minimized whatever its sign."""
    return float(spec.get("weight", 1.0))


def harmonic_objective(spec: dict, config: Config, model, loads: dict | None = None,
                       points=None) -> Callable:
    """``response ↦ weight × Σ_ω |j(u(ω))|`` of a
    :class:`~fesens.fem.transient.harmonic.HarmonicResponse` (traced when it is), with
    ``j`` of :func:`harmonic_functional` and the weight of :func:`harmonic_weight`."""
    functional = harmonic_functional(spec, config, model, loads, points)
    weight = harmonic_weight(spec)
    return lambda response: weight * np.sum(response.magnitudes(functional))


@contextmanager
def refusing_resonance(config: Config) -> Iterator[None]:
    """Around a harmonic response of ``config``: a driving frequency at a resonance
    (:class:`~fesens.errors.ResonanceError`) becomes a :class:`ConfigError` naming the
    frequency's key, so that the command line refuses it as bad input (exit 2)."""
    try:
        yield
    except ResonanceError as exc:
        given = config.data["harmonic"]["frequencies"][exc.index]
        raise ConfigError(f"{config.source}: harmonic.frequencies[{exc.index}] = {given:g} "
                          f"is refused: {exc}") from None


def build_time_problem(config: Config, model, design: dict):
    """The design problem of a time-dependent optimization config: a
    :class:`~fesens.opt.time_design.TransientDesignProblem` of the objective's time
    aggregate, or a :class:`~fesens.opt.time_design.HarmonicDesignProblem` of its response
    summed over the driving frequencies; ``design``: the keywords every design problem
    takes (volume fraction, interpolation, filter, projection, passive cells, solver).

    Raises
    ------
    ConfigError
        Extra constraints, or an objective that a time level cannot evaluate.
    """
    data = config.data
    if data["constraints"]["extra"]:
        raise ConfigError(f"[[constraints.extra]] of analysis.type = "
                          f"\"{analysis_type(data)}\": a time-dependent design has the "
                          "volume constraint only; remove constraints.extra")
    spec = data["objective"]
    if analysis_type(data) == "harmonic":
        damping = data["damping"]
        return HarmonicDesignProblem(
            model, angular_frequencies(data), harmonic_functional(spec, config, model),
            weight=harmonic_weight(spec), density=inertia(config),
            damping=(damping["mass"], damping["stiffness"]), **design)
    run = time_problem(config, model)
    term = step_objective(spec, config, model)
    return TransientDesignProblem(
        model, run, term, lambda values: aggregate(values, run.times, spec),
        lambda mass: run_inputs(config, mass),
        term_args=lambda scale, rho: term.arguments(None, None, {SCALE.name: scale}, rho),
        **design)
