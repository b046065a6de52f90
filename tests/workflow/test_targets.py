"""The ``--wrt`` targets as records (:mod:`fesens.workflow.targets`): the choices come from
the records and the physics registry, the help and the docs list them, each record's
gradient passes a closed-form check through the command's own computation
(:func:`~fesens.workflow.analysis.compute_sensitivity`), and a target is refused where it
does not apply."""

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from fesens.cli import cli
from fesens.config import ConfigError, load_config
from fesens.physics import PHYSICS
from fesens.workflow import analysis, targets
from fesens.workflow.analysis import compute_sensitivity

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def config():
    """A 24 × 8 MBB half-beam, E = 1, one point load F, full material."""
    return load_config(ROOT / "tests" / "data" / "small_mbb.toml")


@pytest.mark.parametrize("physics", list(PHYSICS), ids=lambda cls: cls.name)
def test_choices_are_the_fixed_records_around_the_physics_parameters(physics):
    per_cell = [name for name, p in {**physics.parameters,
                                     **targets.chosen_parameters(physics)}.items()
                if p.per_cell and name != "scale"]
    offered = targets.targets(physics)
    assert tuple(offered) == ("density", *per_cell, "loads", "points")
    assert all(target.name == name for name, target in offered.items())
    assert {offered[name].output for name in per_cell} == {targets.CELLS}


def test_a_registered_target_is_offered_and_helped(monkeypatch):
    """A record added to TARGETS is a --wrt choice of every physics and is in the help."""
    toy = dataclasses.replace(targets.TARGETS["loads"], name="toy", about="a toy input")
    monkeypatch.setitem(targets.TARGETS, "toy", toy)
    assert targets.wrt_choices()[-1] == "toy"
    help_text = " ".join(CliRunner().invoke(cli, ["sensitivity", "--help"]).output.split())
    assert "a toy input (toy)" in help_text and "|toy]" in help_text


def test_help_and_docs_list_the_records():
    help_text = " ".join(CliRunner().invoke(cli, ["sensitivity", "--help"]).output.split())
    for _, about in targets.listed():
        assert about in help_text, about
    documented = (ROOT / "fesens" / "docs" / "config.md").read_text(encoding="utf-8")
    listed = "|".join(choice for choice, _ in targets.listed())
    assert f"`fesens sensitivity --wrt {listed}`" in " ".join(documented.split())


@pytest.mark.parametrize(("wrt", "degree"), [("loads", 2.0), ("E", -1.0), ("density", -3.0)])
def test_each_record_differentiates_what_it_names(config, wrt, degree):
    """Euler's theorem for homogeneous functions, Σ x ∂c/∂x = k c: the compliance
    c = fᵀ K⁻¹ f is of degree 2 in the load magnitudes, −1 in E and, by SIMP ρ³ (at ρ = 1,
    far above its minimum), −3 in the density."""
    result = compute_sensitivity(config, wrt=wrt, objective=None, design=None)
    assert result.target.name == wrt
    if wrt == "loads":
        weighted = sum(result.at[name] * result.gradient[name] for name in result.at)
    else:
        weighted = float(np.dot(result.at, result.gradient))
    assert weighted == pytest.approx(degree * result.value, rel=1e-8)


def test_points_start_at_the_mesh_and_are_translation_invariant(config):
    """Moving every node by the same vector changes nothing: the node gradient sums to 0."""
    result = compute_sensitivity(config, wrt="points", objective=None, design=None)
    assert result.at.shape == config.mesh.points.shape
    assert result.at is not config.mesh.points
    np.testing.assert_allclose(result.gradient.sum(axis=0), 0.0,
                               atol=1e-10 * np.abs(result.gradient).max())


def test_a_target_is_refused_where_it_does_not_apply(config):
    model = compute_sensitivity(config, wrt="loads", objective=None,
                                design=None).evaluation.model
    transient_only = dataclasses.replace(targets.TARGETS["density"], analyses=("transient",))
    with pytest.raises(ConfigError, match="--wrt density does not apply to a static"):
        transient_only.check(config, model, "static", matrix_free=False)
    with pytest.raises(ConfigError, match="needs the assembled stiffness"):
        targets.TARGETS["points"].check(config, model, "static", matrix_free=True)
    targets.TARGETS["density"].check(config, model, "static", matrix_free=True)
    with pytest.raises(ConfigError, match=re.escape("--wrt conductivity does not apply to "
                                                    "elasticity (choose one of density, E")):
        targets.target(config.physics_class, "conductivity")


def test_the_old_helpers_warn_and_read_the_records(config):
    model = compute_sensitivity(config, wrt="loads", objective=None,
                                design=None).evaluation.model
    with pytest.deprecated_call(match="targets.target"):
        start = analysis.wrt_point(config, model, "E", np.ones(config.mesh.n_cells))
    np.testing.assert_array_equal(start, np.ones(config.mesh.n_cells))  # E = 1
    with pytest.deprecated_call(match="targets.target"):
        assert analysis.wrt_inputs("loads", {"F": 2.0}) == {"loads": {"F": 2.0}}
