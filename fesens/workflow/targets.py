"""Command targets: what ``fesens sensitivity --wrt NAME`` differentiates, one :class:`WRT`
record each, in one registry.

A record says what the traced input is (its value at the evaluated design, made from the
model and the config), which keywords of
:meth:`~fesens.config.evaluation.ConfigEvaluation.values` it sets, how its gradient is
written (:mod:`fesens.workflow.sensitivity_output`: a cell field, one vector per node, or
one row per load), how far ``--check`` may move it, whether a matrix-free solve can
differentiate it, and which analyses offer it. ``density``, ``loads`` and ``points`` are
fixed records; every other target is a per-cell parameter of a physics, read from the
physics registry (:data:`~fesens.physics.PHYSICS`), so that a physics' parameters are
offered without naming a physics here. The command line's ``--wrt`` choices and help,
both analyses of :mod:`fesens.workflow.analysis` and the docs' list read this module.

To add a target: its :class:`WRT` record in :data:`TARGETS` (before ``loads`` to stand
among the fields) and its test in ``tests/workflow/test_targets.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fesens.config import Config, ConfigError
from fesens.config.increments import INCREMENTAL
from fesens.config.time_sections import ANALYSES_OF_ORDER, STATIC
from fesens.fem.model.linear import LinearModel
from fesens.fem.model.matrix_free import folded_weights
from fesens.fem.model.parameters import SCALE, Parameter
from fesens.physics import PHYSICS
from fesens.workflow.sensitivity_output import CELLS, LOADS, NODES, GradientOutput

#: Every analysis a config may ask for (``[analysis] type``).
ANALYSES: tuple[str, ...] = (STATIC, *(a for names in ANALYSES_OF_ORDER.values()
                                      for a in names), INCREMENTAL)

#: The phrase of ``--wrt``'s help (and the docs' list) for the physics' parameters.
PARAMETER_ABOUT = ("<per-cell parameter>", "a per-cell material parameter of the config's "
                                           "physics")




def smallest_cell(config: Config) -> float:
    """The smallest diagonal of a cell's bounding box: how far a node may move before a
    cell degenerates (the scale of a node's move in ``--check``)."""
    corners = config.mesh.points[config.mesh.cells]  # (n_cells, n_nodes, dim)
    return float(np.min(np.linalg.norm(corners.max(axis=1) - corners.min(axis=1), axis=1)))

@dataclass(frozen=True)
class WRT:
    """One ``--wrt`` target: the input it traces, how its gradient is written, where it
    applies.

    Attributes
    ----------
    name : str
        The ``--wrt`` choice, and the ``<wrt>`` of the gradient's name
        ``d_<objective>_d_<wrt>``.
    about : str
        What it is, in ``--wrt``'s help: ``"the load magnitudes"``.
    start : callable
        ``start(config, model, rho)``: the traced input's value at the design density
        ``rho`` ``(n_cells,)``: an array ``(n_cells,)`` or ``(n_points, dim)``, or
        ``{load name: magnitude factor}``.
    keywords : callable
        ``keywords(parameter)``: the keywords of
        :meth:`~fesens.config.evaluation.ConfigEvaluation.values` that set the input to
        ``parameter``.
    output : GradientOutput
        How its gradient is reported and written (per cell, per node or per load).
    check_scale : callable
        ``check_scale(config, at)``: how far ``--check`` may move each entry of ``at``
        (a scalar, or ``at``'s shape).
    needs_assembly : callable
        ``needs_assembly(config, model)``: whether a static solve of it needs the
        assembled stiffness (``solver.options.matrix_free = true`` never forms it).
    is_density : bool
        The input is the density itself (the evaluation's first argument).
    requires_loads : bool
        Refused for a config without loads.
    analyses : tuple of str
        The analyses (``[analysis] type``) that offer it.
    """

    name: str
    about: str
    start: Callable[[Config, Any, np.ndarray], Any]
    keywords: Callable[[Any], dict]
    output: GradientOutput
    check_scale: Callable[[Config, Any], Any]
    needs_assembly: Callable[[Config, Any], bool]
    is_density: bool = False
    requires_loads: bool = False
    analyses: tuple[str, ...] = ANALYSES

    def evaluation_inputs(self, parameter, rho: np.ndarray) -> tuple[Any, dict]:
        """``(density, keywords)`` of the evaluation at ``parameter`` (the density
        ``rho`` ``(n_cells,)`` unless the input is the density)."""
        return (parameter if self.is_density else rho), self.keywords(parameter)

    def check(self, config: Config, model, analysis: str, matrix_free: bool) -> None:
        """Refuse a target the config cannot differentiate: an analysis that does not offer
        it, no loads to differentiate, or a static matrix-free solve that cannot form it.

        Raises
        ------
        ConfigError
            Naming ``--wrt`` and what to change.
        """
        if analysis not in self.analyses:
            raise ConfigError(f"--wrt {self.name} does not apply to a {analysis} analysis "
                              f"(it offers {', '.join(self.analyses)})")
        if self.requires_loads and not model.loads:
            raise ConfigError(f"--wrt {self.name}: the config defines no loads")
        if analysis == STATIC and matrix_free and self.needs_assembly(config, model):
            raise ConfigError(f"--wrt {self.name} needs the assembled stiffness, which "
                              f"solver.options.matrix_free = true never forms (it solves one "
                              f"per-cell field on the mesh's own coordinates): give "
                              f"solver.options.matrix_free = false, or another --wrt")


def _own_scale(config: Config, at) -> np.ndarray:
    """A density moves by a fraction of itself (a density of 0 stays 0)."""
    return np.abs(np.asarray(at, dtype=float))


def _parameter_scale(config: Config, at) -> np.ndarray:
    """A parameter moves by a fraction of itself, by a fraction of 1 where it is 0."""
    magnitude = np.abs(np.asarray(at, dtype=float))
    return np.where(magnitude > 0.0, magnitude, 1.0)


def parameter_target(name: str) -> WRT:
    """The target of the per-cell parameter ``name`` of a physics (``E``,
    ``conductivity``, ...): its config value broadcast to one value per cell ``(n_cells,)``,
    set through the evaluation's ``parameters``, written as a cell field."""

    def start(config: Config, model, rho) -> np.ndarray:
        if name not in model.parameters:  # a finite-strain law of other constants than E, nu
            raise ConfigError(f"--wrt {name}: this model has no parameter {name!r} (its "
                              f"parameters: {', '.join(model.parameters)})")
        # the model keeps a parameter's value under its name (fesens.physics.spec)
        return np.broadcast_to(np.asarray(getattr(model, name), dtype=float),
                               (config.mesh.n_cells,)).copy()

    def needs_assembly(config: Config, model) -> bool:
        # a parameter per cell may make the stiffness several fields
        fields = model.stiffness_fields(**{name: start(config, model, None)})
        return folded_weights(model, fields[0]) is None

    return WRT(name, PARAMETER_ABOUT[1], start, lambda p: {"parameters": {name: p}}, CELLS,
               _parameter_scale, needs_assembly)


#: The fixed targets, in the order ``--wrt`` lists them (the physics' parameters stand
#: after ``density``).
TARGETS: dict[str, WRT] = {target.name: target for target in (
    WRT("density", "the density scale", lambda config, model, rho: rho.copy(),
        lambda p: {}, CELLS, _own_scale, lambda config, model: False, is_density=True),
    WRT("loads", "the load magnitudes",
        lambda config, model, rho: {name: 1.0 for name in model.loads},
        lambda p: {"loads": p}, LOADS, lambda config, at: 1.0,
        lambda config, model: False, requires_loads=True),
    WRT("points", "the node coordinates: shape sensitivities",
        lambda config, model, rho: config.mesh.points.copy(),
        lambda p: {"points": p}, NODES, lambda config, at: smallest_cell(config),
        lambda config, model: True),
)}
_FIELDS = ("density",)  # the fixed targets listed before the physics' parameters


def chosen_parameters(physics: type[LinearModel]) -> dict[str, Parameter]:
    """The parameters a physics' ``[physics]`` options may choose instead of its own (the
    constants of a finite-strain law, :attr:`~fesens.physics.spec.PhysicsConfig.material_of`),
    over every choice of every option with choices (the others at their defaults)."""
    material_of = physics.config.material_of
    if material_of is None:
        return {}
    defaults = {option.name: option.default for option in physics.config.options}
    chosen: dict[str, Parameter] = {}
    for option in physics.config.options:
        for choice in option.choices or ():
            chosen.update(material_of({**defaults, option.name: choice}) or {})
    return chosen


def targets(physics: type[LinearModel] | None = None) -> dict[str, WRT]:
    """``{name: WRT}`` of the targets ``physics`` offers (every registered physics' when
    None): ``density``, its per-cell parameters (the stiffness scale aside) and those its
    options may choose (a law's constants, :func:`chosen_parameters`), the other fixed
    targets. Whether a config's model has the parameter is checked when the target starts
    (:func:`parameter_target`)."""
    classes = PHYSICS if physics is None else (physics,)
    names = dict.fromkeys(name for cls in classes
                          for name, parameter in {**cls.parameters,
                                                  **chosen_parameters(cls)}.items()
                          if parameter.per_cell and name != SCALE.name)
    fields = {name: TARGETS[name] for name in _FIELDS}
    rest = {name: target for name, target in TARGETS.items() if name not in _FIELDS}
    return {**fields, **{name: parameter_target(name) for name in names}, **rest}


def wrt_choices(physics: type[LinearModel] | None = None) -> tuple[str, ...]:
    """``--wrt`` choices: ``density`` (the solve's ``scale``), the per-cell parameters of
    ``physics`` (of every registered physics when None), ``loads`` (the load magnitudes),
    ``points`` (the node coordinates: shape sensitivities)."""
    return tuple(targets(physics))


def target(physics: type[LinearModel], name: str) -> WRT:
    """The target ``--wrt name`` of a config of ``physics``.

    Raises
    ------
    ConfigError
        ``physics`` does not offer it (the message lists what it offers).
    """
    offered = targets(physics)
    if name not in offered:
        raise ConfigError(f"--wrt {name} does not apply to {physics.name} (choose one of "
                          f"{', '.join(offered)})")
    return offered[name]


def listed() -> tuple[tuple[str, str], ...]:
    """``((choice, about), ...)`` as ``--wrt``'s help and the docs list them: the fixed
    targets, with the physics' parameters as one entry after ``density``."""
    fields = tuple((name, TARGETS[name].about) for name in _FIELDS)
    return (*fields, PARAMETER_ABOUT,
            *((name, t.about) for name, t in TARGETS.items() if name not in _FIELDS))


def wrt_help() -> str:
    """``--wrt``'s help text, from the records."""
    return ("Differentiate with respect to " + "; ".join(
        f"{about} ({choice})" if not choice.startswith("<") else about
        for choice, about in listed()) + ".")

