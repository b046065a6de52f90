"""A physics added from outside fesens (:mod:`reaction_diffusion`) works everywhere: closed
forms, gradients, ``fesens solve`` and ``fesens sensitivity`` from a TOML file."""

import csv
import json
from pathlib import Path

import meshio
import numpy as np
import pytest
from click.testing import CliRunner
from reaction_diffusion import ReactionDiffusion

from fesens.ad.checks import taylor_test
from fesens.cli import cli
from fesens.mesh import rectangle
from fesens.objectives import compliance, mean_value

ROOT = Path(__file__).resolve().parents[2]
LENGTH, HEIGHT = 4.0, 0.2


# ------------------------------------------------------------------ closed forms
def bar(n_cells: int, k: float = 1.0, c: float = 4.0) -> ReactionDiffusion:
    """A long strip [0, L] x [0, H]; its top and bottom edges are insulated, so the
    solution depends on x only: ``k u'' = c u − f``."""
    return ReactionDiffusion(rectangle(n_cells, 2, LENGTH, HEIGHT), k=k, c=c)


def ends_fixed(n_cells: int, k: float, c: float):
    """u(0) = 0, u(L) = 1, no source: ``u = sinh(x/ℓ) / sinh(L/ℓ)``, ``ℓ = √(k/c)``."""
    model = bar(n_cells, k, c).fix("left", value=0.0).fix("right", value=1.0)
    ell = np.sqrt(k / c)
    return model, lambda x: np.sinh(x / ell) / np.sinh(LENGTH / ell)


def uniform_source(n_cells: int, k: float, c: float, f: float = 3.0):
    """u(0) = u(L) = 0, source f: ``u = (f/c) (1 − cosh((x − L/2)/ℓ) / cosh(L/(2ℓ)))``."""
    model = bar(n_cells, k, c).fix("left").fix("right")
    model.source(f)
    ell = np.sqrt(k / c)
    return model, lambda x: f / c * (1 - np.cosh((x - LENGTH / 2) / ell)
                                     / np.cosh(LENGTH / (2 * ell)))


def end_flux(n_cells: int, k: float, c: float, q: float = 0.5):
    """u(0) = 0, k u'(L) = q: ``u = (q ℓ / k) sinh(x/ℓ) / cosh(L/ℓ)``."""
    model = bar(n_cells, k, c).fix("left")
    model.flux("right", q)
    ell = np.sqrt(k / c)
    return model, lambda x: q * ell / k * np.sinh(x / ell) / np.cosh(LENGTH / ell)


@pytest.mark.parametrize("case", [ends_fixed, uniform_source, end_flux])
def test_forward_solution_matches_the_closed_form_to_second_order(case):
    errors = []
    for n_cells in (40, 80):
        model, exact = case(n_cells, k=2.0, c=3.0)
        u = model.solve().field[:, 0]
        errors.append(np.max(np.abs(u - exact(model.mesh.points[:, 0]))))
    scale = np.max(np.abs(exact(np.linspace(0.0, LENGTH, 101))))
    assert errors[1] < 2e-4 * scale
    assert 3.5 < errors[0] / errors[1] < 4.5            # O(h²) nodal error


# ------------------------------------------------------------------ gradients
@pytest.mark.parametrize("objective", ["compliance", "mean_u"])
def test_gradient_with_respect_to_k_and_c_passes_the_taylor_test(objective):
    model, _ = uniform_source(12, k=2.0, c=3.0)
    model.flux("top", 0.3)
    n = model.mesh.n_cells
    rng = np.random.default_rng(1)
    at = {"k": 2.0 + rng.random(n), "c": 3.0 + rng.random(n)}

    def J(p):
        state = model.solve(k=p["k"], c=p["c"])
        return compliance(state) if objective == "compliance" else mean_value(state, "top")

    result = taylor_test(J, at, verbose=False)
    assert abs(result.rate - 2.0) < 0.1


# ------------------------------------------------------------------ the command line
CONFIG = """\
name = "toy"

[mesh]
type = "rectangle"
size = [4.0, 0.5]
cells = [40, 5]

[physics]
type = "reaction_diffusion"

[material]
k = 2.0
c = 3.0

[[supports]]
group = "left"
value = 0.0

[[loads]]
type = "source"
name = "f"
value = 1.0

[[loads]]
type = "flux"
name = "q"
group = "right"
value = 0.5

[objective]
type = "mean_u"
group = "right"
"""


def fesens(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_solve_runs_from_a_toml_file(toy_physics, tmp_path):
    (tmp_path / "toy.toml").write_text(CONFIG)
    out = tmp_path / "solve"
    result = fesens("solve", tmp_path / "toy.toml", "--out", out)
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [".fesens-files", "solution.json",
                                                      "solution.png", "solution.vtu"]
    summary = json.loads((out / "solution.json").read_text())
    assert summary["physics"] == "reaction_diffusion"
    solution = meshio.read(out / "solution.vtu")
    u = solution.point_data["u"].ravel()
    assert summary["max_u"] == pytest.approx(u.max())
    assert "max u" in result.output
    # balance (Σ_a N_a = 1): what enters, f·|Ω| + q·H, reacts (∫ c u dΩ) or leaves through the
    # fixed edge (−reaction); ∫ u dΩ is exact as cell area × mean nodal value on rectangles
    cells = solution.cells_dict["quad"]
    integral_u = (4.0 * 0.5 / len(cells)) * u[cells].mean(axis=1).sum()
    (reaction,) = summary["reactions"].values()
    assert reaction[0] == pytest.approx(3.0 * integral_u - (1.0 * 4.0 * 0.5 + 0.5 * 0.5),
                                        rel=1e-10)


def test_sensitivity_to_k_and_c_runs_from_a_toml_file(toy_physics, tmp_path):
    """Scaling k and c by α scales u by 1/α: Σ_e (k_e ∂J/∂k_e + c_e ∂J/∂c_e) = −J."""
    config = tmp_path / "toy.toml"
    config.write_text(CONFIG)
    total = 0.0
    for wrt, value in (("k", 2.0), ("c", 3.0)):
        out = tmp_path / wrt
        result = fesens("sensitivity", config, "--wrt", wrt, "--out", out)
        assert result.exit_code == 0, result.output
        summary = json.loads((out / "sensitivity.json").read_text())
        assert summary["objective"] == "mean_u"
        field = meshio.read(out / "sensitivity.vtu").cell_data[f"d_mean_u_d_{wrt}"][0]
        assert (out / "sensitivity.png").is_file()
        total += value * field.sum()
    assert total == pytest.approx(-summary["value"], rel=1e-8)


def test_sensitivity_to_the_loads_runs_from_a_toml_file(toy_physics, tmp_path):
    """mean_u is linear in the load magnitudes m: Σ m dJ/dm = J at m = 1."""
    config = tmp_path / "toy.toml"
    config.write_text(CONFIG)
    out = tmp_path / "loads"
    result = fesens("sensitivity", config, "--wrt", "loads", "--out", out)
    assert result.exit_code == 0, result.output
    with open(out / "sensitivity.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [row["name"] for row in rows] == ["f", "q"]
    value = json.loads((out / "sensitivity.json").read_text())["value"]
    assert sum(float(row["derivative"]) for row in rows) == pytest.approx(value, rel=1e-10)


def test_a_parameter_of_another_physics_is_refused(toy_physics, tmp_path):
    config = tmp_path / "toy.toml"
    config.write_text(CONFIG)
    result = fesens("sensitivity", config, "--wrt", "E", "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "--wrt E does not apply to reaction_diffusion (choose one of density, k, c, " \
           "loads, points)" in result.output


def test_without_registration_the_config_is_refused(tmp_path):
    config = tmp_path / "toy.toml"
    config.write_text(CONFIG)
    result = fesens("solve", config, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert 'physics.type = "reaction_diffusion" is not allowed' in result.output


# ------------------------------------------------------------------ what it cost
def test_fesens_does_not_know_the_toy_physics():
    """Adding it changed no file of fesens: its module and one registration line."""
    names = (ReactionDiffusion.name, ReactionDiffusion.__name__, "reaction_diffusion")
    mentions = [str(path.relative_to(ROOT)) for path in (ROOT / "fesens").rglob("*")
                if path.is_file() and path.suffix in (".py", ".toml", ".md")
                and any(name in path.read_text(encoding="utf-8") for name in names)]
    assert mentions == []
