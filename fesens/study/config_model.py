"""A parametric model made from a config file (``fesens solve``'s format) and a list of
parameter targets and outputs; what ``fesens study`` runs.

Targets (what a study parameter sets):

===========================  ==============================================================
``material.KEY``             a ``[material]`` key of the physics (E, nu; conductivity)
``loads.NAME.magnitude``     factor on the load named NAME (its config value times this)
``loads.NAME.angle``         rotation in degrees of NAME's vector in the plane of two
                             ``axes`` (from the first towards the second; 2D: x towards y)
===========================  ==============================================================

To make the angle of a vector load differentiable, a vector load whose angle is a parameter
is set up as one unit load per component (``NAME[x]``, ``NAME[y]``, ...) and the solve gets
the magnitudes ``m = s · R(θ) v`` (``v`` the config's vector, ``s`` the magnitude factor);
every other load is the config's, with its magnitude factor.

A sample is evaluated by :class:`~fesens.config.evaluation.ConfigEvaluation`, the code
path of ``fesens sensitivity``, through the analysis the base config declares (static,
nonlinear, load cases, transient, dynamic, harmonic): a sample's value and gradient are
those of ``fesens sensitivity`` of the config with the sample's values.

Everything here is plain data plus module-level functions, so it pickles without
cloudpickle; the setup re-reads the mesh from the resolved config in each worker.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fesens.config import Config, resolve
from fesens.config.evaluation import ConfigEvaluation
from fesens.fem.assembly.dofs import AXES


def component_name(load: str, axis: int) -> str:
    """``"tip[x]"``: the unit load of one component of a vector load."""
    return f"{load}[{AXES[axis]}]"


def is_vector_load(config: Config, load: dict) -> bool:
    """Whether a load's value is a vector (one unit load per component; the physics' load
    kind says, :class:`fesens.physics.spec.LoadKind`)."""
    return config.physics_class.config.load_kind(load["type"]).vector


@dataclass(frozen=True)
class Target:
    """What one parameter sets: ``kind`` is ``"material"`` (``key`` E, nu, conductivity),
    ``"magnitude"`` or ``"angle"`` (``key`` a load name; ``axes`` the rotation plane)."""

    kind: str
    key: str
    axes: tuple[int, int] = (0, 1)


@dataclass
class Context:
    """What a worker keeps between samples: the config's evaluation of the outputs (the
    code path of ``fesens sensitivity``), the base vectors of the rotated loads, the
    scalar loads and the density (full material, as ``fesens sensitivity`` without
    ``--design``)."""

    evaluation: ConfigEvaluation
    outputs: tuple[str, ...]
    vectors: dict[str, np.ndarray]
    scalars: tuple[str, ...]
    density: np.ndarray


@dataclass(frozen=True)
class ConfigSetup:
    """``setup()`` of a config-made model (picklable): resolve the config, split the loads
    whose angle is a parameter (``rotated``) into component loads, and build the config's
    evaluation of the outputs (:class:`~fesens.config.evaluation.ConfigEvaluation`), by
    the analysis the config declares."""

    data: dict
    source: str
    outputs: tuple[tuple[str, dict], ...]
    rotated: tuple[str, ...] = ()

    def __call__(self) -> Context:
        config = resolve(copy.deepcopy(self.data), base_dir=Path.cwd(), source=self.source,
                         optimize=False)
        vectors, scalars, loads = {}, [], []
        for load in config.data["loads"]:
            if load["name"] in self.rotated:
                vectors[load["name"]] = np.array(load["value"], dtype=float)
                for axis in range(config.dim):
                    unit = [0.0] * config.dim
                    unit[axis] = 1.0
                    loads.append({**load, "name": component_name(load["name"], axis),
                                  "value": unit})
            else:
                scalars.append(load["name"])
                loads.append(load)
        config.data["loads"] = loads
        evaluation = ConfigEvaluation(config, [spec for _, spec in self.outputs])
        return Context(evaluation, tuple(name for name, _ in self.outputs), vectors,
                       tuple(scalars), np.ones(config.mesh.n_cells))


def rotate(vector: np.ndarray, angle_degrees, axes: tuple[int, int]) -> list:
    """``R(θ) v`` in the plane of ``axes`` (traced in ``angle_degrees``); a list of
    components (some traced)."""
    theta = angle_degrees * (np.pi / 180.0)
    a, b = axes
    c, s = np.cos(theta), np.sin(theta)
    out = [float(v) for v in vector]
    out[a] = c * vector[a] - s * vector[b]
    out[b] = s * vector[a] + c * vector[b]
    return out


@dataclass(frozen=True)
class ConfigEvaluate:
    """``evaluate(context, params)`` of a config-made model (picklable)."""

    targets: tuple[tuple[str, Target], ...]

    def __call__(self, context: Context, params: Mapping) -> dict:
        material, factors, angles = {}, {}, {}
        for name, target in self.targets:
            value = params[name]
            if target.kind == "material":
                material[target.key] = value
            elif target.kind == "magnitude":
                factors[target.key] = value
            else:
                angles[target.key] = (value, target.axes)
        magnitudes = {name: factors.get(name, 1.0) for name in context.scalars}
        for name, vector in context.vectors.items():  # the loads of the angle targets
            components = rotate(vector, *angles[name])
            factor = factors.get(name, 1.0)
            for axis, component in enumerate(components):
                magnitudes[component_name(name, axis)] = factor * component
        evaluation = context.evaluation
        # each sample from the model's reference state, as `fesens sensitivity` of its
        # config starts: a Newton warm start from the worker's previous sample would make
        # the last bits depend on which samples that worker ran (on the worker count)
        evaluation.model.restore_warm_start({})
        values = evaluation.values(context.density, loads=magnitudes, parameters=material)
        return {name: evaluation.combined(value)
                for name, value in zip(context.outputs, values, strict=True)}
