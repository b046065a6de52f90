"""A generated mesh too large for the machine is refused before anything is allocated."""

import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from fesens.cli import cli
from fesens.config import ConfigError, load_config, memory
from fesens.config.memory import estimate_bytes
from fesens.mesh.ground_structure import candidate_bars

SMALL_MBB = (Path(__file__).resolve().parents[1] / "data" / "small_mbb.toml").read_text()


def config_with(tmp_path: Path, cells: str, extra: str = "") -> Path:
    path = tmp_path / "big.toml"
    path.write_text(SMALL_MBB.replace("cells = [24, 8]", f"cells = {cells}{extra}"))
    return path


@pytest.mark.parametrize("cells", ["[100000, 100000]", f"[{10**15}, 1]"])
def test_a_mesh_beyond_the_available_memory_is_refused_at_once(tmp_path, cells):
    path = config_with(tmp_path, cells)
    tracemalloc.start()
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # refused before any mesh array exists: the peak, not the time (a loaded machine
    # stretches that at will), tells that nothing was built
    assert peak < 50e6
    message = str(caught.value)
    assert f"big.toml: mesh.cells = {cells} needs about " in message
    # no [solver]: auto, which would pick the matrix-free multigrid for a mesh this size
    assert " GB (mesh and vectors of the matrix-free multigrid solver), more than the " in message
    assert "mesh.allow_large = true" in message


def test_a_normal_mesh_is_accepted(tmp_path):
    assert load_config(config_with(tmp_path, "[60, 20]")).mesh.n_cells == 1200


def test_allow_large_overrides_the_estimate(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 1e5)   # a 100 kB machine
    with pytest.raises(ConfigError, match="more than the 0.0001 GB"):
        load_config(config_with(tmp_path, "[24, 8]"))
    config = load_config(config_with(tmp_path, "[24, 8]", "\nallow_large = true"))
    assert config.mesh.n_cells == 192


MILLION = {"type": "box", "cells": [160, 80, 80], "cell_type": "hex8"}


def solver_table(backend="auto", **options):
    return {"backend": backend, "options": options}


def test_the_estimate_follows_the_solver(monkeypatch):
    """A million hex8 cells fit a 24 GB machine with the matrix-free multigrid
    (measured peak 6.2 GB), not with CHOLMOD; auto picks what fits."""
    monkeypatch.setattr(memory, "available_bytes", lambda: 24e9)
    memory.check_mesh_memory(MILLION, solver_table("gmg", matrix_free=True))
    memory.check_mesh_memory(MILLION, solver_table())  # auto: matrix-free gmg
    assert memory.solve_kind(MILLION, solver_table()) == "matrix_free"
    assert memory.solve_kind({**MILLION, "cell_type": "hex27"}, solver_table()) == "iterative"
    assert memory.solve_kind({**MILLION, "cells": [16, 8, 8]}, solver_table()) == "direct"
    with pytest.raises(ConfigError, match=r"GB \(mesh, matrix and factorization\)"):
        memory.check_mesh_memory(MILLION, solver_table("cholmod"))
    matrix_free = estimate_bytes(MILLION["cells"], "hex8", "matrix_free")
    assert 6.2e9 < matrix_free < 8e9
    assert estimate_bytes(MILLION["cells"], "hex8", "iterative") > matrix_free


def test_the_estimate_grows_like_nested_dissection():
    two_d = [estimate_bytes([n, n], "quad4") for n in (100, 200)]
    three_d = [estimate_bytes([n, n, n], "hex8") for n in (10, 20)]
    assert 4.0 < two_d[1] / two_d[0] < 5.0         # n log n for 4x the unknowns
    assert 8.0 < three_d[1] / three_d[0] < 16.0    # between n and n^(4/3) for 8x


def test_fesens_optimize_exits_2_on_a_mesh_too_large(tmp_path):
    result = CliRunner().invoke(cli, ["optimize", str(config_with(tmp_path, "[100000, 100000]")),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.output.startswith("error: ")
    assert "big.toml: mesh.cells = [100000, 100000] needs about " in result.output
    assert not (tmp_path / "out").exists()


TRUSS = """name = "truss"
[mesh]
type = "ground_structure"
size = [2.0, 1.0]
cells = [200, 100]
[physics]
type = "truss"
[[supports]]
group = "left"
value = 0.0
[[loads]]
type = "point"
point = [2.0, 0.0]
value = [0.0, -1.0]
[objective]
type = "compliance"
[constraints]
volume_fraction = 0.1
[filter]
type = "none"
"""


def test_a_ground_structure_beyond_the_memory_is_refused_with_its_bars(tmp_path,
                                                                         monkeypatch):
    """[200, 100] without a reach is 125 million bars: once a MemoryError traceback."""
    monkeypatch.setattr(memory, "available_bytes", lambda: 16e9)
    path = tmp_path / "truss.toml"
    path.write_text(TRUSS)
    result = CliRunner().invoke(cli, ["optimize", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"error: {path}: mesh.cells = [200, 100] with no mesh.reach gives 125,265,288 "
        "candidate bars, which need about 175 GB, more than the 16 GB of memory available; "
        "give mesh.reach = a few grid steps (e.g. 3) or fewer cells\n")
    assert not (tmp_path / "out").exists()
    path.write_text(TRUSS.replace("cells = [200, 100]", "cells = [200, 100]\nreach = 3.0"))
    assert load_config(path).mesh.n_cells == candidate_bars((200, 100), 3.0) == 159_700


def test_allow_large_beyond_the_machine_is_one_line_naming_the_size(tmp_path):
    """Once a MemoryError traceback: now exit 1 (a resource failure, not bad input), one
    line with the cells and the estimate, and no results folder."""
    cells = f"[{10**7}, {10**7}]"
    path = config_with(tmp_path, cells, "\nallow_large = true")
    with pytest.raises(MemoryError, match=rf"mesh.cells = \[{10**7}, {10**7}\] \(mesh"
                       r"\.allow_large = true\) needs about .* GB \(.*\).*: the machine ran "
                       r"out of memory building the mesh \(.*\); use fewer cells"):
        load_config(path)
    result = CliRunner().invoke(cli, ["optimize", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: out of memory: {path}: mesh.cells = {cells}"), result.output
    assert not (tmp_path / "out").exists()
