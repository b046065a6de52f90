"""Configs that passed the checks and then failed at run time (exit 1, "numerical failure")
either run or are refused at check time: exit code 2 and one line naming the key, its value
and what to do instead."""

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from fesens.cli import cli
from fesens.config import build_model, parse_config
from fesens.config.presets import preset_text
from fesens.config.toml_writer import dumps
from fesens.solvers import available_solvers


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def write(folder: Path, text: str, name: str = "config.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def refused(result, *fragments: str) -> str:
    """The one error line of a run refused at check time, holding every fragment."""
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_heatsink_pulse_runs_with_geometric_multigrid(tmp_path):
    """The transient step matrices ``a M + b K`` get the model's lattice, so ``gmg`` runs
    the preset (it failed with "gmg needs the structured grid") and its peak temperature
    history is the direct solver's."""
    text = preset_text("heatsink_pulse").replace("cells = [30, 30]", "cells = [8, 8]")
    text = text.replace("steps = 25", "steps = 4")
    histories = {}
    for backend in ("gmg", "superlu"):
        config = write(tmp_path, f'{text}\n[solver]\nbackend = "{backend}"\n', f"{backend}.toml")
        out = tmp_path / backend
        result = run("solve", config, "--out", out)
        assert result.exit_code == 0, result.output
        histories[backend] = np.genfromtxt(out / "history.csv", delimiter=",", names=True)
    gmg, direct = histories["gmg"], histories["superlu"]
    assert gmg.dtype.names == direct.dtype.names and len(gmg) == 5
    for column in gmg.dtype.names:
        np.testing.assert_allclose(gmg[column], direct[column], rtol=1e-6, atol=1e-12)


FOLLOWER = """
[mesh]
type = "rectangle"
size = [2.0, 1.0]
cells = [4, 2]

[physics]
type = "hyperelasticity"

[[supports]]
group = "left"

[[loads]]
type = "pressure"
group = "right"
value = 0.001
follower = true

[solver]
backend = "{backend}"
"""


@pytest.mark.parametrize("backend", ["cholmod", "cg"])
def test_a_follower_pressure_refuses_a_symmetric_backend(tmp_path, backend):
    if backend not in available_solvers():
        pytest.skip(f"{backend} is not installed")
    config = write(tmp_path, FOLLOWER.format(backend=backend))
    line = refused(run("solve", config, "--out", tmp_path / "out"),
                   f'solver.backend = "{backend}"', "loads[0].follower = true", '"lu"')
    assert "unsymmetric" in line
    assert not (tmp_path / "out").exists()


def test_a_follower_pressure_runs_with_lu(tmp_path):
    config = write(tmp_path, FOLLOWER.format(backend="lu"))
    result = run("solve", config, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output


MATRIX_FREE = {"backend": "gmg", "options": {"matrix_free": True}}


def springs() -> dict:
    return {"mesh": {"type": "rectangle", "size": [2.0, 1.0], "cells": [8, 4]},
            "physics": {"type": "elasticity"},
            "supports": [{"group": "bottom", "components": ["y"]}, {"point": [0.0, 1.0]}],
            "loads": [{"type": "point", "point": [0.0, 0.0], "value": [1.0, 0.0]}],
            "springs": [{"point": [0.0, 0.0], "stiffness": 1.0, "components": ["x"]}]}


def convection() -> dict:
    return {"mesh": {"type": "rectangle", "size": [1.0, 1.0], "cells": [4, 4]},
            "physics": {"type": "heat"}, "supports": [], "loads": [],
            "convection": [{"group": "right", "h": 1.0, "ambient": 1.0}]}


@pytest.mark.parametrize(("raw", "table", "solver"), [
    (convection(), "[[convection]]", MATRIX_FREE),
    (springs(), "[[springs]]", {**MATRIX_FREE, "options": {**MATRIX_FREE["options"],
                                                           "device": "numpy"}})])
def test_matrix_free_multigrid_refuses_terms_beside_the_cells(tmp_path, raw, table, solver):
    """A convection adds a boundary matrix, which the matrix-free multigrid never
    assembles, and the device multigrid adds no springs (the CPU's matrix-free operator
    does: tests/solvers/test_matrix_free_springs.py); the assembled ``gmg`` solves them."""
    config = write(tmp_path, dumps({**raw, "solver": solver}))
    refused(run("solve", config, "--out", tmp_path / "out"),
            "solver.options.matrix_free = true", table, "matrix_free = false")
    assembled = write(tmp_path, dumps({**raw, "solver": {"backend": "gmg"}}), "assembled.toml")
    result = run("solve", assembled, "--out", tmp_path / "assembled")
    assert result.exit_code == 0, result.output


def conduction_bar(mesh: dict) -> str:
    """Heat through a bar of length 2: T = 0 on the left end, a flux q = 1 into the right
    end, conductivity 1, every other side insulated: T(x) = q x / k, which every element
    of at least linear order represents exactly."""
    return dumps({"mesh": mesh, "physics": {"type": "heat"},
                  "supports": [{"group": "left", "value": 0.0}],
                  "loads": [{"type": "flux", "group": "right", "value": 1.0}]})


@pytest.mark.parametrize(("generator", "cells", "size", "cell_type"), [
    ("rectangle", [2, 1], [2.0, 1.0], "quad8"),
    ("rectangle", [2, 1], [2.0, 1.0], "quad9"),
    ("box", [2, 1, 1], [2.0, 1.0, 1.0], "hex20"),
    ("box", [2, 1, 1], [2.0, 1.0, 1.0], "hex27"),
])
def test_generated_higher_order_meshes(tmp_path, generator, cells, size, cell_type):
    """The cell types the config guide lists for a generated mesh are generated."""
    text = conduction_bar({"type": generator, "size": size, "cells": cells,
                           "cell_type": cell_type})
    config = parse_config(text, source="test", base_dir=tmp_path, optimize=False)
    assert config.mesh.cell_type == cell_type
    model = build_model(config)
    T = np.asarray(model.solve().u).ravel()
    np.testing.assert_allclose(T, config.mesh.points[:, 0], atol=1e-10)


def test_a_top_level_key_after_a_table_header_is_named(tmp_path):
    """TOML puts ``loads = []`` written after ``[[supports]]`` into that support."""
    text = ('[mesh]\ntype = "rectangle"\nsize = [1.0, 1.0]\ncells = [2, 2]\n\n'
            '[physics]\ntype = "heat"\n\n[[convection]]\ngroup = "right"\nh = 1.0\n'
            'ambient = 1.0\n\n[[supports]]\ngroup = "left"\nloads = []\n')
    config = write(tmp_path, text)
    line = refused(run("solve", config, "--out", tmp_path / "out"),
                   "'loads' is inside the [[supports]] table supports[0]",
                   "move loads = [] above the first table header")
    assert "missing" not in line
    moved = write(tmp_path, "loads = []\n" + text.replace("loads = []\n", ""), "moved.toml")
    assert run("solve", moved, "--out", tmp_path / "moved").exit_code == 0


def test_a_key_that_a_table_takes_is_not_stray(tmp_path):
    """``loads`` of a ``[[load_cases]]`` table belongs there."""
    text = ('[mesh]\ntype = "rectangle"\nsize = [1.0, 1.0]\ncells = [2, 2]\n\n'
            '[physics]\ntype = "heat"\n\n[[supports]]\ngroup = "left"\n\n'
            '[[loads]]\ntype = "flux"\nname = "q"\ngroup = "right"\nvalue = 1.0\n\n'
            '[[load_cases]]\nname = "one"\nloads = ["q"]\n')
    config = parse_config(text, source="test", base_dir=tmp_path, optimize=False)
    assert config.data["load_cases"][0]["loads"] == ["q"]
