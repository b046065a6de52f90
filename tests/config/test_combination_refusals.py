"""Combinations of features that passed the config check and then failed (exit 1, or a
refusal after the results folder was written) are refused at check time: exit 2, one
``error:`` line naming the keys, nothing written. Found by the combination test
(tests/combinations)."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from fesens.cli import cli

#: A 12 x 6 cantilever (or a 4 x 2 ground structure) loaded at the middle of its right face.
MESHES = {
    "rectangle": 'type = "rectangle"\nsize = [2.0, 1.0]\ncells = [12, 6]',
    "ground_structure": 'type = "ground_structure"\nsize = [2.0, 1.0]\ncells = [4, 2]',
}
LOAD = {"truss": "[1.0, 0.0]", "elasticity": "[1.0, 0.0]", "heat": "1.0"}

#: The optimize-only sections of a robust design.
ROBUST = """
[constraints]
volume_fraction = 0.5

[filter]
type = "density"
radius = 0.25

[projection]
type = "heaviside"
robust = true

[optimizer]
type = "mma"

[stop]
max_iter = 2
"""


def config_text(physics: str, mesh: str, extra: str = "") -> str:
    return f"""name = "refusal"

[mesh]
{MESHES[mesh]}

[physics]
type = "{physics}"

[[supports]]
group = "left"

[[loads]]
type = "point"
name = "F"
point = [2.0, 0.5]
value = {LOAD[physics]}

[objective]
type = "compliance"
{extra}"""


def refused(args: list, out: Path, *fragments: str) -> None:
    """``fesens ARGS`` exits 2 with one ``error:`` line holding every fragment and writes
    nothing to ``out``."""
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not out.exists() or not any(out.iterdir()), sorted(out.iterdir())


@pytest.mark.parametrize("physics, mesh, cells", [("truss", "rectangle", "quad4"),
                                                  ("heat", "ground_structure", "line2")])
@pytest.mark.parametrize("command", ["solve", "sensitivity", "study"])
def test_a_physics_on_cells_it_does_not_discretise(tmp_path, command, physics, mesh, cells):
    """A bar physics on a continuum mesh, or a continuum physics on bars, is refused by the
    config check, so a study refuses it as ``fesens sensitivity`` does (every sample of the
    study failed at setup, exit 1)."""
    config = tmp_path / "config.toml"
    config.write_text(config_text(physics, mesh), encoding="utf-8")
    out = tmp_path / "out"
    if command == "study":
        study = tmp_path / "study.toml"
        study.write_text('base = "config.toml"\n[design]\ntype = "grid"\n[[parameters]]\n'
                         'target = "loads.F.magnitude"\nvalues = [1.0]\n[[outputs]]\n'
                         'type = "compliance"\n', encoding="utf-8")
        args = ["study", study, "--out", out, "--workers", "0", "-q"]
    else:
        args = [command, config, "--out", out, "-q",
                *(["--wrt", "loads"] if command == "sensitivity" else [])]
    refused(args, out, f'physics.type = "{physics}"', f'mesh.type = "{mesh}"', cells)


@pytest.mark.parametrize("physics, analysis, time", [
    ("heat", "transient", "[time]\nend = 0.3\nsteps = 3\n"),
    ("elasticity", "dynamic", "[time]\nend = 0.3\nsteps = 3\n"),
    ("elasticity", "harmonic", "[harmonic]\nfrequencies = [0.01]\n"),
], ids=["transient", "dynamic", "harmonic"])
def test_robust_projection_with_a_time_analysis(tmp_path, physics, analysis, time):
    """The robust formulation evaluates its three designs by static solves: with a time
    analysis it failed after writing config.toml ('scale' of shape (3, n_cells))."""
    material = "[material]\ndensity = 1.0\n" if physics == "elasticity" else ""
    config = tmp_path / "config.toml"
    config.write_text(config_text(physics, "rectangle", f'{material}\n[analysis]\ntype = '
                                  f'"{analysis}"\n{time}{ROBUST}'), encoding="utf-8")
    out = tmp_path / "out"
    refused(["optimize", config, "--out", out, "-q"], out, "projection.robust",
            f'analysis.type = "{analysis}"')
