"""The physics registry is the one place physics are listed: each declares everything the
rest of fesens reads, every choice is read from it, and no module outside
``fesens/physics`` names a physics."""

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest
from reaction_diffusion import ReactionDiffusion

from fesens.cli.analysis import sensitivity
from fesens.config import ConfigError, build_model, resolve
from fesens.config.increments import increment_run, offers_increments
from fesens.fem.model.parameters import Parameter
from fesens.fem.model.solution import Solution
from fesens.physics import PHYSICS, register_physics
from fesens.physics.spec import Option, PhysicsConfig
from fesens.workflow.analysis import wrt_choices
from fesens.workflow.targets import chosen_parameters

ROOT = Path(__file__).resolve().parents[2]
#: The registered physics and the toy one of this folder.
ALL = [*PHYSICS, ReactionDiffusion]


def minimal_config(cls, **physics) -> dict:
    """A 2D config of ``cls`` with one load of each of its kinds (read from its fragment)."""
    loads = []
    for kind in cls.config.loads:
        load = {"type": kind.type, "value": [1.0, 0.5] if kind.vector else 1.0}
        if kind.on != "cells":
            load["group"] = "right"
        loads.append(load)
    mesh = "ground_structure" if cls.bars else "rectangle"  # bars or volume cells
    config = {"mesh": {"type": mesh, "size": [2.0, 1.0], "cells": [4, 2]},
              "physics": {"type": cls.name, **physics},
              "supports": [{"group": "left"}], "loads": loads}
    if offers_increments(cls):  # a path-dependent physics runs its load history
        config["analysis"] = {"type": "incremental", "factors": [0.0, 1.0]}
    return config


def check(raw: dict):
    return resolve(raw, base_dir=ROOT, source="test.toml", optimize=False)


@pytest.mark.parametrize("cls", ALL, ids=lambda cls: cls.name)
def test_each_physics_declares_everything(cls):
    assert cls.name and cls.field_name
    assert isinstance(cls.config, PhysicsConfig)
    assert issubclass(cls.solution_class, Solution)
    assert "scale" in cls.parameters
    for name, parameter in cls.parameters.items():
        assert isinstance(parameter, Parameter) and parameter.name == name
        assert parameter.description and parameter.range_text()
    signature = inspect.signature(cls).parameters
    for key in cls.config.material:                   # parameters and constructor keywords
        assert key in cls.parameters and key in signature
    for option in cls.config.options:
        assert option.name in signature
    for kind in cls.config.loads:
        assert callable(getattr(cls, kind.method))
    assert cls.config.responses


@pytest.mark.parametrize("cls", ALL, ids=lambda cls: cls.name)
def test_each_physics_runs_from_its_fragment_alone(cls):
    """A config made from the fragment resolves, builds (one load per kind) and solves;
    the model keeps each material parameter under its name; the picture and the reported
    numbers name fields of the solution."""
    register_physics(cls)                 # the toy's registration; a no-op for the others
    config = check(minimal_config(cls))
    model = build_model(config)
    assert type(model) is cls
    assert list(model.loads) == [f"{kind.type}{i}" for i, kind in enumerate(cls.config.loads)]
    for key in cls.config.material:
        assert np.shape(getattr(model, key)) == (model.mesh.n_cells,)
    if offers_increments(cls):
        history = increment_run(config, model).solve()
        assert history.displacements.shape == (2, model.dofmap.n_dofs)
        return
    solution = model.solve()
    fields = {**solution.point_data(), **solution.cell_data()}
    assert solution.point_data()[cls.field_name].shape[0] == model.mesh.n_points
    if cls.config.plot is not None:
        assert cls.config.plot.field in fields
    for item in cls.config.reported:
        assert item.field in fields


def physics_error(name: str) -> str:
    with pytest.raises(ConfigError) as info:
        check(minimal_config(PHYSICS.default, type=name))
    return str(info.value)


def test_config_validation_offers_the_registered_physics(toy_physics):
    known = ", ".join(f'"{name}"' for name in PHYSICS.names())
    assert "reaction_diffusion" in PHYSICS.names()
    assert (f'physics.type = "nope" is not allowed: expected one of {known}'
            in physics_error("nope"))


def test_an_unknown_physics_is_refused_naming_the_known_ones():
    message = physics_error("acoustics")
    for name in PHYSICS.names():
        assert f'"{name}"' in message
    assert "reaction_diffusion" not in message


def test_the_default_physics_is_the_first_registered():
    raw = minimal_config(PHYSICS.default)
    del raw["physics"]["type"]
    assert check(raw).physics == PHYSICS.names()[0]


def wrt_option():
    (option,) = [p for p in sensitivity.params if p.name == "wrt"]
    return option


def test_the_cli_wrt_choices_come_from_the_registry(toy_physics):
    per_cell = {name for cls in PHYSICS
                for name, p in {**cls.parameters, **chosen_parameters(cls)}.items()
                if p.per_cell and name != "scale"}
    choices = wrt_option().type.choices
    assert set(choices) == {"density", "loads", "points", *per_cell}
    assert {"k", "c"} <= set(choices) and choices == wrt_choices()
    PHYSICS.unregister(toy_physics.name)
    assert not {"k", "c"} & set(wrt_option().type.choices)


def test_a_physics_without_a_config_fragment_is_refused():
    class Bare(ReactionDiffusion):
        name = "bare"
        config = None

    with pytest.raises(TypeError, match="Bare has no configuration fragment"):
        register_physics(Bare)
    assert "bare" not in PHYSICS


def test_material_keys_must_be_parameters():
    class Wrong(ReactionDiffusion):
        name = "wrong"
        config = PhysicsConfig(material=("k", "density"))

    with pytest.raises(ValueError, match=r"Wrong.config.material \['density'\] are not "
                                         "parameters"):
        register_physics(Wrong)


# ------------------------------------------------------------------ no physics by name
def physics_names_in(path: Path, names) -> list[str]:
    """``file:line`` of every string constant equal to a physics name in a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in names]


def test_no_module_outside_fesens_physics_names_a_physics():
    names = set(PHYSICS.names())
    found = [hit for path in sorted((ROOT / "fesens").rglob("*.py"))
             if (ROOT / "fesens" / "physics") not in path.parents
             for hit in physics_names_in(path, names)]
    assert found == []


def test_the_name_check_finds_a_physics_name():
    """The check above would see ``physics == "elasticity"``."""
    assert physics_names_in(ROOT / "fesens" / "physics" / "elasticity.py", {"elasticity"})


def test_fragment_keys_must_be_constructor_keywords():
    class Hidden(ReactionDiffusion):
        name = "hidden"
        config = PhysicsConfig(material=("k",), options=(Option("plane", "", "stress"),))

    with pytest.raises(ValueError, match=r"Hidden.config: \['plane'\] are not keywords of "
                                         "Hidden's constructor"):
        register_physics(Hidden)
