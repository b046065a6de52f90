"""The objective kinds a config file can name: one record each, in one registry.

A record (:class:`ObjectiveKind`) says everything the config layer needs of a generic
objective of :mod:`fesens.objectives.static`: its name, the keys of its ``[objective]``
(or ``[[constraints.extra]]``, study output) table, how the checked table becomes the traced
response ``f(state, ρ)``, whether it is a sum over the parts of the mesh (so a distributed
model can evaluate it per MPI rank and add), and whether every physics offers it under its
own name (``volume``) rather than through its fragment's ``responses``. Config validation,
the model builder, studies and the MPI refusal read :data:`OBJECTIVES` through
:func:`objective_kind` and the other functions here, at call time, so a test may replace the
mapping with a copy that holds one more record.

Adding a generic objective: its function in :mod:`fesens.objectives.static` and its record
here; a physics offers it by a line of its fragment's ``responses`` (or the record sets
``everywhere``). The names live here only: the config layer checks the kinds a fragment names
against :func:`fragment_kinds` when it reads the fragment
(:func:`check_offered_kinds`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from fesens.config import selections
from fesens.config.checks import (
    POSITIVE,
    REQUIRED,
    ConfigError,
    Key,
    boolean,
    component,
    integer,
    number,
    show,
)
from fesens.objectives.eigen import eigenvalue, eigenvalue_ks, eigenvalue_sum, frequency
from fesens.objectives.static import (
    mean_value,
    strain_energy,
    stress_ks,
    stress_pnorm,
    value_at,
    volume,
    von_mises_squared,
)
from fesens.opt.problem import Response
from fesens.opt.resident import compliance_objective
from fesens.physics import PHYSICS
from fesens.physics.spec import PhysicsConfig

if TYPE_CHECKING:
    from fesens.config.resolved import Config


#: What an objective kind is a function of (:attr:`ObjectiveKind.analysis`).
ANALYSES = ("static", "eigen", "buckling")


@dataclass(frozen=True)
class ObjectiveKind:
    """One generic objective kind of the config files.

    Attributes
    ----------
    name : str
        The kind's name, which a physics' ``responses`` maps its type names to.
    build : callable
        ``build(spec, config) -> f(state, ρ)``: the traced response of a checked table
        ``spec`` of a config.
    keys : mapping of str to Key
        The keys of its table besides ``type``.
    vector_keys : mapping of str to Key
        Further keys when the physics' field is a vector (e.g. a value's ``component``).
    selection : bool
        Its table selects nodes (``point`` or ``group``, one of them required), checked
        against the mesh.
    additive : bool
        It is a sum over the cells, so a model split among MPI ranks evaluates it on each
        rank and adds (the distributed model accepts only such objectives).
    everywhere : bool
        Every physics offers it under its name, without a ``responses`` line.
    analysis : {"static", "eigen", "buckling"}
        What it is a function of: the state of a static solve (``build`` gives
        ``f(state, ρ)``), the lowest eigenpairs of a frequency design (``build`` gives
        ``f(modes, ρ)``, the negative of the objective, which the design minimizes), or
        the lowest buckling load factors of the static solve (``build`` gives
        ``f(result, ρ)`` of a :class:`~fesens.fem.analysis.buckling.Buckling`: a
        ``[[constraints.extra]]`` only, offered by every physics whose solution has what it
        ``reads``).
    reads : tuple of str
        Methods of the physics' solution it calls (e.g. ``von_mises_squared``): a physics
        may offer it only if its ``solution_class`` has them.
    design_keys : tuple of str
        Keys of ``keys`` that act on the design density ``ρ`` (e.g. a stress relaxation
        exponent): a parameter study, which has no design, offers the kind without them.
    maximum : callable or None
        For an aggregate (a p-norm, KS): ``maximum(spec, config) -> f(state, ρ)``, the
        exact maximum it approximates, which the adaptive normalization of a constraint
        (``normalization = "adaptive"``, :mod:`fesens.opt.normalized`) tracks.
    """

    name: str
    build: Callable[[dict, Config], Response]
    keys: Mapping[str, Key] = field(default_factory=dict)
    vector_keys: Mapping[str, Key] = field(default_factory=dict)
    selection: bool = False
    additive: bool = False
    everywhere: bool = False
    analysis: str = "static"
    reads: tuple[str, ...] = ()
    design_keys: tuple[str, ...] = ()
    maximum: Callable[[dict, Config], Response] | None = None

    def __post_init__(self):
        if self.analysis not in ANALYSES:
            raise ValueError(f"objective kind {self.name!r}: analysis={self.analysis!r}; "
                             f"expected one of {', '.join(ANALYSES)}")
        stray = [key for key in self.design_keys if key not in self.keys]
        if stray:
            raise ValueError(f"objective kind {self.name!r}: design_keys {stray} are not "
                             "among its keys")
        object.__setattr__(self, "keys", MappingProxyType(dict(self.keys)))
        object.__setattr__(self, "vector_keys", MappingProxyType(dict(self.vector_keys)))


def _compliance(spec: dict, config: Config) -> Response:
    # the one compliance response, which a design on a device evaluates resident there
    return compliance_objective


def _strain_energy(spec: dict, config: Config) -> Response:
    return lambda state, rho: strain_energy(state)


def _volume(spec: dict, config: Config) -> Response:
    return lambda state, rho: volume(state, rho, fraction=True)


def _plastic_work(spec: dict, config: Config) -> Response:
    # a path-dependent run's increment state carries its cumulative dissipation
    weight = spec["weight"]
    return lambda state, rho: weight * state.plastic_work


def _value(spec: dict, config: Config) -> Response:
    mesh = config.mesh
    weight, comp = spec["weight"], spec.get("component")
    if "point" in spec:
        point = mesh.points[mesh.nearest_node(spec["point"])]
        return lambda state, rho: weight * value_at(state, point, comp)
    group = spec["group"]
    return lambda state, rho: weight * mean_value(state, group, comp)


def _stress_scale(spec: dict) -> Callable:
    """``ρ ↦ ρ^q`` of the table's ``stress_exponent`` q, or ``ρ ↦ None`` without one."""
    exponent = spec.get("stress_exponent")
    return lambda rho: None if exponent is None else rho ** exponent


def _stress_pnorm(spec: dict, config: Config) -> Response:
    scale = _stress_scale(spec)
    return lambda state, rho: stress_pnorm(state, spec["p"], stress_scale=scale(rho))


def _stress_ks(spec: dict, config: Config) -> Response:
    scale = _stress_scale(spec)
    return lambda state, rho: stress_ks(state, spec["rho"], stress_scale=scale(rho))


def _stress_max(spec: dict, config: Config) -> Response:
    """The largest cell-mean von Mises stress, relaxed as the aggregate of ``spec`` is."""
    scale = _stress_scale(spec)
    return lambda state, rho: np.sqrt(np.max(von_mises_squared(state, scale(rho))))


def _buckling(spec: dict, config: Config) -> Response:
    """``limit / KS(μ_1..μ_count)`` of a :class:`~fesens.fem.analysis.buckling.Buckling`:
    ≤ 1 where the KS bound of the lowest load factors (below the lowest) is ≥ ``limit``; a
    bound that cuts a cluster of repeated load factors is a config error naming ``count``."""
    def utilization(result, rho):
        try:
            return spec["limit"] / eigenvalue_ks(result, spec["rho"], spec["count"])
        except ValueError as exc:
            raise ConfigError(
                f"constraints.extra (name = {show(spec.get('name', spec['type']))}): {exc}; "
                f"this design has repeated load factors, so give a count = {spec['count']} "
                "that covers them (count + 1 ≤ modes)") from None

    return utilization


POINT_VALUE = {
    **selections.selection_spec("point", "group"),
    "weight": Key(number(), 1.0, "the objective is weight × value (−1 maximises it)"),
}
STRESS_EXPONENT = Key(POSITIVE, None, "stress relaxation: stresses scaled by ρ^q (default: "
                                      "the stiffness interpolation)")

def _single_eigenvalue(single: Callable) -> Callable:
    """The builder of an objective of one simple eigenvalue (``eigenvalue``, ``frequency``);
    a repeated one is a config error naming the kinds that handle it."""
    def build(spec: dict, config: Config) -> Response:
        def value(modes):
            try:
                return single(modes, spec["index"])
            except ValueError as exc:
                raise ConfigError(f"objective.type = {show(spec['type'])}: {exc}; this "
                                  "design has repeated eigenvalues, so give type = "
                                  "\"eigenvalue_ks\" or \"eigenvalue_sum\" with count "
                                  "covering them") from None

        return lambda modes, rho: -value(modes)

    return build


def _eigenvalue_sum(spec: dict, config: Config) -> Response:
    return lambda modes, rho: -eigenvalue_sum(modes, spec["count"])


def _eigenvalue_ks(spec: dict, config: Config) -> Response:
    return lambda modes, rho: -eigenvalue_ks(modes, spec["rho"], spec["count"])


#: The keys every eigen objective takes: the eigen solve's settings.
EIGEN_SOLVE = {
    "modes": Key(integer(1), None, "eigenpairs computed per iteration (default: one more "
                                   "than the objective uses, to see a repeated one)"),
    "lumped": Key(boolean(), False, "lumped (HRZ) instead of consistent mass"),
}
INDEX = Key(integer(0), 0, "which eigenvalue, 0 the lowest")
COUNT = Key(integer(1), 3, "how many of the lowest eigenvalues")

#: The objective kinds by name, static then eigen, in the order messages list them.
OBJECTIVES: Mapping[str, ObjectiveKind] = MappingProxyType({kind.name: kind for kind in (
    ObjectiveKind("compliance", _compliance, additive=True),
    ObjectiveKind("value", _value, POINT_VALUE, selection=True,
                  vector_keys={"component": Key(component(), REQUIRED, "0, 1, 2 or x, y, z")}),
    ObjectiveKind("stress_pnorm", _stress_pnorm,
                  {"p": Key(number(1.0, low_open=True), 8.0, "p-norm exponent"),
                   "stress_exponent": STRESS_EXPONENT},
                  reads=("von_mises_squared",), design_keys=("stress_exponent",),
                  maximum=_stress_max),
    ObjectiveKind("stress_ks", _stress_ks,
                  {"rho": Key(POSITIVE, 50.0, "KS aggregation parameter"),
                   "stress_exponent": STRESS_EXPONENT},
                  reads=("von_mises_squared",), design_keys=("stress_exponent",),
                  maximum=_stress_max),
    ObjectiveKind("strain_energy", _strain_energy, reads=("strain_energy",)),
    ObjectiveKind("plastic_work", _plastic_work,
                  {"weight": Key(number(), 1.0, "the objective is weight × the plastic work "
                                 "dissipated up to the increment (−1 maximises it)")}),
    ObjectiveKind("volume", _volume, everywhere=True),
    ObjectiveKind("eigenvalue", _single_eigenvalue(eigenvalue), {"index": INDEX, **EIGEN_SOLVE},
                  analysis="eigen"),
    ObjectiveKind("frequency", _single_eigenvalue(frequency), {"index": INDEX, **EIGEN_SOLVE},
                  analysis="eigen"),
    ObjectiveKind("eigenvalue_sum", _eigenvalue_sum, {"count": COUNT, **EIGEN_SOLVE},
                  analysis="eigen"),
    ObjectiveKind("eigenvalue_ks", _eigenvalue_ks,
                  {"count": COUNT, "rho": Key(POSITIVE, 50.0, "KS aggregation parameter"),
                   **EIGEN_SOLVE}, analysis="eigen"),
    ObjectiveKind("buckling", _buckling,
                  {"count": Key(integer(1), 3, "load factors in the KS bound"),
                   "rho": Key(POSITIVE, 50.0, "KS aggregation parameter"),
                   "modes": Key(integer(2), None, "load factors computed per iteration "
                                                  "(default count + 1)")},
                  analysis="buckling", reads=("stress",)),
)})


def objective_kind(name: str) -> ObjectiveKind:
    """The record of a generic objective kind.

    Raises
    ------
    KeyError
        Naming the known kinds.
    """
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise KeyError(f"no objective kind {name!r}; expected one of "
                       f"{', '.join(OBJECTIVES)}") from None


def buckling_kinds(solution_class: type) -> tuple[ObjectiveKind, ...]:
    """The constraint kinds of the buckling analysis a physics offers: those whose ``reads``
    its ``solution_class`` has (a prestress for the geometric stiffness)."""
    return tuple(kind for kind in OBJECTIVES.values() if kind.analysis == "buckling"
                 and all(hasattr(solution_class, name) for name in kind.reads))


def static_kind(name: str) -> ObjectiveKind | None:
    """The record of an objective kind of a static solve, or None for an eigen objective
    (:mod:`fesens.config.frequency`)."""
    kind = objective_kind(name)
    return kind if kind.analysis == "static" else None


def additive() -> tuple[ObjectiveKind, ...]:
    """The kinds a model split among MPI ranks evaluates (sums over the cells)."""
    return tuple(kind for kind in OBJECTIVES.values() if kind.additive)


def everywhere() -> tuple[ObjectiveKind, ...]:
    """The kinds every physics offers under their own names (``volume``)."""
    return tuple(kind for kind in OBJECTIVES.values() if kind.everywhere)


def fragment_kinds(analysis: str) -> tuple[str, ...]:
    """The names of the kinds of an ``analysis`` that a physics offers through its fragment
    (``"static"``: ``responses``; ``"eigen"``: ``eigen_responses``), in the order messages
    list them; the kinds every physics offers under their own names are not among them."""
    return tuple(kind.name for kind in OBJECTIVES.values()
                 if kind.analysis == analysis and not kind.everywhere)


def check_offered_kinds(fragment: PhysicsConfig, solution_class: type | None = None) -> None:
    """Check that a physics' fragment maps its objective types to registered kinds: its
    ``responses`` to kinds of a static solve, its ``eigen_responses`` to eigen kinds under
    names its ``responses`` do not take, and, given the physics' ``solution_class``, that the
    solution has what each kind reads (:attr:`ObjectiveKind.reads`). The physics layer
    cannot check this when the fragment is defined, because the records live in this layer
    above it.

    Raises
    ------
    ValueError
        Naming the first type that maps to no such kind, and the kinds it may map to, or
        the types whose kinds read what the solution does not recover.
    """
    static, eigen = fragment_kinds("static"), fragment_kinds("eigen")
    for name, kind in fragment.responses.items():
        if kind not in static:
            raise ValueError(f"response {name!r}: {kind!r} is not a generic objective; "
                             f"expected one of {', '.join(static)}")
    for name, kind in fragment.eigen_responses.items():
        if kind not in eigen or name in fragment.responses:
            raise ValueError(f"eigen response {name!r}: {kind!r} is not an eigen "
                             f"objective ({', '.join(eigen)}) or the name is taken")
    if solution_class is None:
        return
    for name, kind in {**fragment.responses, **fragment.eigen_responses}.items():
        missing = [method for method in objective_kind(kind).reads
                   if not callable(getattr(solution_class, method, None))]
        if missing:
            raise ValueError(f"response {name!r}: {kind!r} reads {', '.join(missing)}, which "
                             f"{solution_class.__name__} does not recover")


def checked_fragment(physics: str) -> PhysicsConfig:
    """The fragment of a registered physics, its objective kinds checked
    (:func:`check_offered_kinds`; a physics may be registered after this module is
    imported, so it is checked where its objective types are read)."""
    cls = PHYSICS.get(physics)
    fragment = cls.config
    check_offered_kinds(fragment, cls.solution_class)
    return fragment


def response_kind(physics: str, type_name: str) -> str:
    """The generic or eigen objective of a response type of a physics (a kind that every
    physics offers, such as ``volume``, under its own name).

    Raises
    ------
    ConfigError
        ``type_name`` is no objective type of the physics, naming the ones it has.
    """
    fragment = checked_fragment(physics)
    offered = {**fragment.responses, **{kind.name: kind.name for kind in everywhere()},
               **fragment.eigen_responses}
    if type_name not in offered:
        raise ConfigError(f"physics {physics} has no objective type {type_name!r}; expected "
                          f"one of {', '.join(offered)}")
    return offered[type_name]
