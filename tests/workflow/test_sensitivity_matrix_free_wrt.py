"""``fesens sensitivity`` with the matrix-free multigrid (``gmg``, ``matrix_free = true``)
refuses at check time a ``--wrt`` whose static solve needs the assembled stiffness (moved
node coordinates, a per-cell ``ν``): exit 2, one line naming ``--wrt`` and
``solver.options.matrix_free``, nothing written. It failed after the check with exit 1
("numerical failure"). The ``--wrt`` targets the matrix-free solve can differentiate
still run."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from fesens.cli import cli

LOAD = {"elasticity": "[1.0, 0.0]", "heat": "1.0"}


def write_config(folder: Path, physics: str) -> Path:
    path = folder / "config.toml"
    path.write_text(f"""name = "matrix-free"

[mesh]
type = "rectangle"
size = [2.0, 1.0]
cells = [8, 4]

[physics]
type = "{physics}"

[[supports]]
group = "left"

[[loads]]
type = "point"
name = "F"
point = [2.0, 0.5]
value = {LOAD[physics]}

[solver]
backend = "gmg"

[solver.options]
matrix_free = true
""", encoding="utf-8")
    return path


def sensitivity(folder: Path, physics: str, wrt: str):
    out = folder / "out"
    result = CliRunner().invoke(cli, ["sensitivity", str(write_config(folder, physics)),
                                      "--wrt", wrt, "--out", str(out), "-q"])
    return result, out


@pytest.mark.parametrize("physics, wrt", [("elasticity", "points"), ("elasticity", "nu"),
                                          ("heat", "points")])
def test_a_target_that_needs_the_assembled_stiffness_is_refused(tmp_path, physics, wrt):
    result, out = sensitivity(tmp_path, physics, wrt)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    assert f"--wrt {wrt}" in lines[0] and "solver.options.matrix_free" in lines[0], lines[0]
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("physics, wrt", [("elasticity", "E"), ("heat", "conductivity"),
                                          ("elasticity", "density")])
def test_a_target_of_one_field_runs_matrix_free(tmp_path, physics, wrt):
    """One per-cell field times constant weights (E with one ν; the conductivity, the
    one component of heat) stays on the matrix-free path."""
    result, out = sensitivity(tmp_path, physics, wrt)
    assert result.exit_code == 0, result.output
    assert (out / "sensitivity.json").is_file()
