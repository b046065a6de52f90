"""The incremental analysis of a path-dependent physics: ``[analysis] type =
"incremental"`` with its table of load factors, the objective over the increments
(``[objective] over_increments``, ``increment``) and the run it builds
(:class:`~fesens.fem.analysis.incremental.IncrementalAnalysis`).

A physics offers the analysis when its class is a
:class:`~fesens.fem.model.nonlinear.NonlinearModel` that declares ``path_independent =
False`` (its state depends on the load history, not on the load alone); such a physics
offers no other analysis. Nothing here names a physics.

The run: the loads and the prescribed values follow the factors ``t_0 = 0, t_1, ..., t_N``
(``dirichlet_factors`` gives the prescribed values their own table), one Newton solve per
increment from the last converged one. The objective at increment ``n`` is its kind read
from the increment's state: ``compliance`` the work-conjugate ``fₙ · uₙ`` of the external
forces (the loads ``tₙ F`` and the reactions on the prescribed dofs), ``value`` a
displacement, ``plastic_work`` the dissipation accumulated up to ``n``; the increments'
values are then aggregated (``final``, ``sum`` or ``ks``) or one ``increment`` is read.

A design: such a model interpolates the density itself (its ``[physics]`` options whose
doc begins "design:", e.g. ``E ρ^penal`` and ``σ_y ρ^yield_penal``), so ``[penalization]``
only passes the densities on above its floor: absent, its penalty is the one that leaves
them as they are (SIMP ``p = 1``) and its floor 1e-3 (raised to the model's exponents, the
usual stiffness floor); given, a penalty that interpolates again is refused
(:func:`check_own_interpolation`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.config.checks import (
    ConfigError,
    Key,
    check_table,
    choice,
    integer,
    join,
    number,
    numbers,
    show,
)
from fesens.config.nonlinear import NEWTON, newton_options
from fesens.config.objectives import objective_kind, response_kind
from fesens.config.solver_needs import check_assembled_system
from fesens.config.time_design import load_matrix
from fesens.fem.analysis.incremental import IncrementalAnalysis
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.model.solution import Solution
from fesens.opt.interpolation import INTERPOLATIONS
from fesens.opt.time_design import TimeState, TransientDesignProblem

INCREMENTAL = "incremental"
#: Aggregates of an objective's value per increment.
OVER_INCREMENTS = ("final", "sum", "ks")
DEFAULT_INCREMENT_RHO = 50.0

#: ``[analysis]`` keys of an incremental analysis besides ``type``.
ANALYSIS = {
    "factors": Key(numbers(), None, "incremental: the load factors t_0 = 0, t_1, ..., t_N "
                   "of the increments (loads and prescribed values scale by them; "
                   "unloading and reversal allowed), required"),
    "dirichlet_factors": Key(numbers(), None, "incremental: the factors of the prescribed "
                             "values, one per load factor, starting at 0 (default: factors)"),
    "max_states": Key(integer(2), None, "incremental: increments the gradient keeps (>= 2): "
                      "the others are recomputed from checkpoints (default: all kept)"),
}

#: ``[objective]`` keys of an incremental analysis.
OBJECTIVE_KEYS = {
    "over_increments": Key(choice(*OVER_INCREMENTS), None, "incremental: the objective's "
                           "value at the last increment (final), summed over the increments "
                           "(sum) or a KS maximum over them (ks); default final"),
    "increment": Key(integer(0), None, "incremental: the objective at this increment only "
                     "(0 the unloaded start, N the last); instead of over_increments"),
    "increment_rho": Key(number(0.0, low_open=True), None, "over_increments = \"ks\": the "
                         "KS parameter (default 50)"),
}

#: The sections an incremental analysis refuses, with the reason.
_OTHER_SECTIONS = {
    "time": "its increments are load factors, given by analysis.factors",
    "initial": "it starts unloaded, from the undeformed state",
    "damping": "it has no inertia",
    "harmonic": "it has no frequency response",
    "probes": "its load–displacement curve follows [load_path]",
}
#: ``[newton]`` keys whose job the increment table does.
_NEWTON_STEPS = ("steps", "adaptive")
#: ``[penalization] minimum`` of a design that does not give it: the model raises the scale
#: to its own exponents (1e-3 to penal = 3 is E's usual floor, 1e-9).
OWN_INTERPOLATION_FLOOR = 1e-3
#: Densities at which an interpolation is checked to pass them on unchanged.
_PROBE = np.linspace(0.0, 1.0, 11)


def offers_increments(physics: type) -> bool:
    """Whether a registered physics is path dependent (its analysis is incremental)."""
    return issubclass(physics, NonlinearModel) and not physics.path_independent


def is_incremental(raw_or_data: dict) -> bool:
    """Whether a config (raw or resolved) declares ``analysis.type = "incremental"``."""
    analysis = raw_or_data.get("analysis")
    return isinstance(analysis, dict) and analysis.get("type") == INCREMENTAL


def _raw_kind(raw: dict) -> Any:
    analysis = raw.get("analysis")
    return analysis.get("type", "static") if isinstance(analysis, dict) else "static"


def _factor_table(path: str, value: Any) -> list[float]:
    table = numbers()(path, value)
    if len(table) < 2:
        raise ConfigError(f"{path} = {show(value)} is not allowed: expected at least two "
                          "load factors, the first 0, e.g. [0, 0.5, 1, 0]")
    if table[0] != 0.0:
        raise ConfigError(f"{path} = {show(value)} is not allowed: the increment table must "
                          f"start at 0 (the unloaded state), not {table[0]:g}; e.g. "
                          f"[0, {', '.join(f'{t:g}' for t in table)}]")
    return table


def check_increment_sections(raw: dict, data: dict, physics: type) -> dict:
    """The checked ``[analysis]`` of an incremental config, and the refusals of what the
    analysis cannot do.

    Parameters
    ----------
    raw : dict
        The parsed config.
    data : dict
        The resolved sections so far (``loads``, ``supports``, ``objective``, ``solver``);
        the objective's increment keys are filled in there.
    physics : type
        The registered physics of ``physics.type``.

    Returns
    -------
    dict
        ``{"analysis": {...}}`` with ``type``, ``factors`` and the optional keys given.

    Raises
    ------
    ConfigError
        A physics that is not path dependent, a path-dependent physics without
        ``analysis.type = "incremental"``, a factor table that does not start at 0 or has
        fewer than two factors, ``dirichlet_factors`` of another length, a section of
        another analysis, a load or support history, load cases, a ``[newton]`` key the
        table replaces, a solver of the stiffness operator only, an objective over
        increments that do not exist.
    """
    kind = _raw_kind(raw)
    if not offers_increments(physics):
        raise ConfigError(f"analysis.type = {show(kind)} is not offered by physics.type = "
                          f"{show(physics.name)}: an incremental analysis follows a path-"
                          "dependent physics' load history")
    if kind != INCREMENTAL:
        raise ConfigError(f"analysis.type = {show(kind)} is not offered by physics.type = "
                          f"{show(physics.name)}: its state depends on the load history, so "
                          f"it needs [analysis] type = \"{INCREMENTAL}\" with factors = "
                          "[0, ..., 1] (the load factors of its increments)")
    table = check_table("analysis", raw["analysis"],
                        {"type": Key(choice(INCREMENTAL), INCREMENTAL, ""), **ANALYSIS})
    if "factors" not in table:
        raise ConfigError("missing key 'analysis.factors': the load factors of the "
                          "increments, starting at 0, e.g. factors = [0, 0.5, 1, 0]")
    table["factors"] = _factor_table("analysis.factors", table["factors"])
    if "dirichlet_factors" in table:
        given = _factor_table("analysis.dirichlet_factors", table["dirichlet_factors"])
        if len(given) != len(table["factors"]):
            raise ConfigError(f"analysis.dirichlet_factors has {len(given)} factors for "
                              f"{len(table['factors'])} analysis.factors: give one per "
                              "increment")
        table["dirichlet_factors"] = given
    for section, why in _OTHER_SECTIONS.items():
        if section in raw:
            raise ConfigError(f"[{section}] does not apply to analysis.type = "
                              f"\"{INCREMENTAL}\" ({why}): remove [{section}]")
    for section in ("loads", "supports"):
        for i, item in enumerate(data[section]):
            if "history" in item:
                raise ConfigError(f"{join(section, i)}.history does not apply to "
                                  f"analysis.type = \"{INCREMENTAL}\": every load and "
                                  "prescribed value follows analysis.factors (prescribed "
                                  "values: analysis.dirichlet_factors); remove it")
    if data.get("load_cases"):
        raise ConfigError(f"[[load_cases]] do not apply to analysis.type = "
                          f"\"{INCREMENTAL}\": a path-dependent state has no superposition "
                          "of cases; run one config per case")
    newton = raw.get("newton")
    for key in _NEWTON_STEPS:
        # a resolved config written back (a study's sample) holds the defaults: not asked
        if isinstance(newton, dict) and newton.get(key, NEWTON[key].default) \
                != NEWTON[key].default:
            raise ConfigError(f"newton.{key} does not apply to analysis.type = "
                              f"\"{INCREMENTAL}\": its increments are analysis.factors "
                              "(a failed increment is cut back up to newton.max_cutbacks "
                              f"times); remove newton.{key}")
    check_assembled_system(data["solver"], f"analysis.type = \"{INCREMENTAL}\"",
                           "the assembled consistent tangent of every increment")
    check_increment_objective(data.get("objective"), physics, len(table["factors"]))
    check_own_interpolation(raw, data, physics)
    return {"analysis": table}


def _own_exponents(physics: type) -> list[str]:
    """The ``[physics]`` options by which the model interpolates its density scale."""
    return [option.name for option in physics.config.options
            if option.doc.startswith("design:")]


def _passes_densities(item: dict, penalty: float) -> bool:
    """Whether the interpolation of a resolved ``[penalization]`` at ``penalty`` is
    ``s_min + ρ (1 − s_min)``: the densities passed on above its floor."""
    cls = INTERPOLATIONS[item["type"]]
    interpolation = cls(penalty=penalty, **{key: value for key, value in item.items()
                                            if key not in ("type", "penalty")})
    if interpolation.multiphase:
        return False
    floor = interpolation.minimum
    return bool(np.allclose(interpolation(_PROBE), floor + _PROBE * (1.0 - floor),
                            rtol=1e-12, atol=0.0))


def check_own_interpolation(raw: dict, data: dict, physics: type) -> None:
    """Fill in and check the ``[penalization]`` of a physics that interpolates the density
    itself (in place: ``data["penalization"]``, when the config has the table).

    A penalty not given is the interpolation's least where that passes the densities on as
    they are (SIMP's ``p = 1``), a floor not given :data:`OWN_INTERPOLATION_FLOOR`.

    Raises
    ------
    ConfigError
        A penalty (or continuation) that interpolates the densities again, so that the
        model's exponents would multiply it (SIMP ``p = 3`` under ``penal = 3``: ``E ∝ ρ⁹``).
    """
    item, exponents = data.get("penalization"), _own_exponents(physics)
    if item is None or not exponents:
        return
    given = raw.get("penalization") if isinstance(raw.get("penalization"), dict) else {}
    cls = INTERPOLATIONS[item["type"]]
    if "penalty" not in given and cls.least_penalty > 0.0:  # 0 is no penalty a config takes
        item["penalty"] = cls.least_penalty
    if "minimum" not in given and "minimum" in item:
        item["minimum"] = OWN_INTERPOLATION_FLOOR
    penalty = item["penalty"]
    values = ([penalty[key] for key in ("start", "final") if key in penalty]
              if isinstance(penalty, dict) else [penalty])
    if all(_passes_densities(item, value) for value in values):
        return
    own = ", ".join(f"{name} = {show(data['physics'][name])}" for name in exponents)
    identity = (f"penalty = {cls.least_penalty:g}" if _passes_densities(item, cls.least_penalty)
                and cls.least_penalty > 0.0 else "type = \"simp\", penalty = 1")
    raise ConfigError(
        f"[penalization] type = {show(item['type'])}, penalty = {show(penalty)} would "
        f"interpolate the densities twice: physics.type = {show(physics.name)} interpolates "
        f"them itself, by the exponents [physics] {' and '.join(exponents)} ({own}); set "
        f"[penalization] {identity} (the densities passed on above penalization.minimum) "
        "and choose the exponents in [physics]")


def refuse_increment_keys(objective: dict | None, raw: dict) -> None:
    """An objective's increment keys apply to an incremental analysis only (``raw`` the
    parsed config of another analysis)."""
    given = [key for key in OBJECTIVE_KEYS if key in (objective or {})]
    if given:
        kind = _raw_kind(raw)
        raise ConfigError(f"objective.{given[0]} applies to analysis.type = "
                          f"\"{INCREMENTAL}\", not analysis.type = {show(kind)}; remove it")


def check_increment_objective(objective: dict | None, physics: type, n_levels: int,
                              path: str = "objective") -> None:
    """Fill in and check an objective table's increment keys (in place).

    Raises
    ------
    ConfigError
        A kind that does not depend on the increment's state (volume), an ``increment``
        beyond the table's ``n_levels`` (``0 .. n_levels − 1``), ``increment`` with
        ``over_increments``, ``increment_rho`` without ``ks``, or a time key.
    """
    if objective is None:
        return
    for key in ("over_time", "time_rho", "power", "load_factors", "weights"):
        if key in objective:
            raise ConfigError(f"{path}.{key} does not apply to analysis.type = "
                              f"\"{INCREMENTAL}\": use {path}.over_increments (final, sum, "
                              f"ks) or {path}.increment; remove {path}.{key}")
    kind = objective_kind(response_kind(physics.name, objective["type"]))
    if kind.everywhere or kind.analysis != "static":
        raise ConfigError(f"{path}.type = {show(objective['type'])} cannot be read per "
                          "increment: an incremental objective is a function of each "
                          "increment's state (compliance, a displacement, the plastic work); "
                          "the volume is a design constraint")
    if "increment" in objective:
        if "over_increments" in objective:
            raise ConfigError(f"{path}.increment and {path}.over_increments: give one (a "
                              "single increment, or an aggregate over all)")
        if objective["increment"] >= n_levels:
            raise ConfigError(f"{path}.increment = {objective['increment']} does not exist: "
                              f"analysis.factors has {n_levels} entries, increments 0 to "
                              f"{n_levels - 1}")
    else:
        objective.setdefault("over_increments", "final")
    if objective.get("over_increments") == "ks":
        objective.setdefault("increment_rho", DEFAULT_INCREMENT_RHO)
    elif "increment_rho" in objective:
        raise ConfigError(f"{path}.increment_rho applies to over_increments = \"ks\", not "
                          f"{show(objective.get('over_increments', 'increment'))}")


def increment_factors(data: dict) -> np.ndarray:
    """The load factors ``(N + 1,)`` of a resolved incremental config."""
    return np.asarray(data["analysis"]["factors"], dtype=float)


def increment_run(config, model):
    """The :class:`~fesens.fem.analysis.incremental.IncrementalAnalysis` of an incremental
    config's ``model``, with its table, checkpointing, Newton options and solver."""
    data = config.data
    analysis, solver = data["analysis"], data["solver"]
    newton = newton_options(data) or {}
    max_cutbacks = newton.pop("max_cutbacks", 4)
    for key in _NEWTON_STEPS:
        newton.pop(key, None)
    return IncrementalAnalysis(model, factors=analysis["factors"],
                               dirichlet_factors=analysis.get("dirichlet_factors"),
                               max_states=analysis.get("max_states"), newton=newton,
                               solver=solver["backend"], max_cutbacks=max_cutbacks)


class IncrementState(Solution):
    """The state an objective kind reads at one increment: the displacement ``u``, the
    external forces ``f`` (the loads and the reactions on the prescribed dofs, so that
    ``f · u`` is their work-conjugate) and the cumulative plastic work."""

    def __init__(self, model, u, f, plastic_work):
        super().__init__(model, u, f, [], {})
        self.plastic_work = plastic_work


class IncrementObjective:
    """``j(state, t, F)``: an objective kind at one increment of the run, the increment's
    record ``state`` (``u`` ``(n_dofs,)``, ``reactions`` ``(n_dofs,)``, ``dissipation``)
    at load factor ``t`` with the loads' matrix ``F`` ``(n_dofs, n_loads)`` (traced in the
    load magnitudes and node coordinates: :meth:`arguments`).

    Parameters
    ----------
    spec : dict
        The resolved objective table.
    config : Config
    model : NonlinearModel
    """

    def __init__(self, spec: dict, config, model):
        self.value = objective_kind(response_kind(config.physics, spec["type"])).build(
            spec, config)
        self.model = model
        self.constrained = model.constrained_dofs

    def arguments(self, loads: dict | None = None, points=None) -> tuple:
        """The ``term_args``: the loads' matrix ``(F,)``."""
        return (load_matrix(self.model, loads, points),)

    def __call__(self, state, t, F):
        n_dofs = self.model.dofmap.n_dofs
        f = t * np.sum(F, axis=1) if F.shape[1] else np.zeros(n_dofs)
        mask = np.zeros(n_dofs)
        mask[self.constrained] = 1.0
        f = f + mask * state.reactions
        return self.value(IncrementState(self.model, state.u, f, state.dissipation), None)


def aggregate_increments(values, spec: dict):
    """The objective over the increments' values ``(N + 1,)``: one ``increment``'s, the
    last (``final``), their ``sum``, or ``ks`` (``max + log Σ exp(ρ (j − max)) / ρ``, an
    upper bound of the largest within ``log(N + 1) / ρ``)."""
    if "increment" in spec:
        return values[spec["increment"]]
    over = spec.get("over_increments", "final")
    if over == "final":
        return values[-1]
    if over == "sum":
        return np.sum(values)
    rho = spec.get("increment_rho", DEFAULT_INCREMENT_RHO)
    top = float(np.max(getval(values)))
    return top + np.log(np.sum(np.exp(rho * (values - top)))) / rho


class _DesignRun:
    """An incremental run as a time-dependent design reads a run: ``times`` the load
    factors and ``values(term, ...)`` with the term called ``term(u, t, state, *args)``, so
    that the design keeps the last increment's displacement ``u`` for its output."""

    def __init__(self, history, factors: np.ndarray):
        self.history, self.times = history, factors

    def values(self, term, *, term_args=(), **inputs):
        return self.history.values(lambda state, t, *args: term(state.u, t, state, *args),
                                   term_args=term_args, **inputs)


class LastIncrement(Solution):
    """What an incremental design shows of a design: the last increment's displacement
    (:meth:`point_data`) and its per-cell internal variables (:meth:`cell_data`: the
    history's ``cell_fields`` at the last increment, e.g. the equivalent plastic strain, the
    von Mises stress, the back stress's norm), read from a plain run of the design that
    ``final()`` makes when they are first asked for (a design written, not every
    iteration)."""

    def __init__(self, model, u, f, coefficients, parameters, loads=None, points=None, *,
                 final: Callable[[], Any]):
        super().__init__(model, u, f, coefficients, parameters, loads, points)
        self._final, self._cells = final, None

    def detached(self) -> LastIncrement:
        """Itself: its values are plain."""
        return self

    def cell_data(self) -> dict[str, np.ndarray]:
        """The last increment's per-cell fields, each ``(n_cells,)``."""
        if self._cells is None:
            history = self._final()
            self._cells = {name: np.asarray(values, dtype=float) for name, values in
                           history.cell_fields(len(history.factors) - 1).items()}
        return dict(self._cells)


@dataclass
class _DesignState(TimeState):
    """A :class:`~fesens.opt.time_design.TimeState` whose plain solution is a
    :class:`LastIncrement`; ``final()`` the plain run of the design."""

    final: Callable[[], Any] | None = None

    def detached(self) -> LastIncrement:
        plain = super().detached()
        return LastIncrement(plain.model, plain.u, plain.f, plain.coefficients,
                             plain.parameters, final=self.final)


class IncrementDesignProblem(TransientDesignProblem):
    """The design problem of an incremental config: a
    :class:`~fesens.opt.time_design.TransientDesignProblem` of the objective over the
    increments, whose state shows the last increment's internal variables
    (:class:`LastIncrement`).

    Parameters
    ----------
    model : NonlinearModel
        A path-dependent model.
    history : IncrementalAnalysis
        Its run over the load factors.
    *args, **options
        As :class:`~fesens.opt.time_design.TransientDesignProblem` after its ``run``.
    """

    def __init__(self, model, history: IncrementalAnalysis, *args, **options):
        super().__init__(model, _DesignRun(history, np.asarray(history.times, dtype=float)),
                         *args, **options)
        self.history = history

    def solve(self, rho) -> _DesignState:
        """The values over the increments at densities ``ρ`` ``(n_cells,)`` (traced)."""
        state = super().solve(rho)
        scale = getval(state.scale)
        return _DesignState(state.values, state.field, state.model, state.scale,
                            final=lambda: self.history.solve(scale=scale))


def build_increment_problem(config, model, design: dict):
    """The design problem of an incremental optimization config: an
    :class:`IncrementDesignProblem` of the objective over the increments (the volume
    constraint only); ``design`` the keywords every design problem takes (volume fraction,
    interpolation, filter, projection, passive cells, solver).

    Raises
    ------
    ConfigError
        Extra constraints.
    """
    data = config.data
    if data["constraints"]["extra"]:
        raise ConfigError(f"[[constraints.extra]] of analysis.type = \"{INCREMENTAL}\": an "
                          "incremental design has the volume constraint only; remove "
                          "constraints.extra")
    spec = data["objective"]
    term = IncrementObjective(spec, config, model)
    return IncrementDesignProblem(
        model, increment_run(config, model), lambda u, t, state, F: term(state, t, F),
        lambda values: aggregate_increments(values, spec), lambda mass: {},
        term_args=term.arguments(), **design)
