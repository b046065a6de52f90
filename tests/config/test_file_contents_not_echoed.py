"""A key that names a data file (a temperature field, a mesh, an initial design, the
``--design`` of a sensitivity, the config itself) whose content is not what it expects: exit
2 with a message that names the file and the key, and never echoes the file's bytes (the
path might be ``/proc/self/environ``, or any file a config from elsewhere points at)."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from fesens.cli import cli

ROOT = Path(__file__).resolve().parents[2]
SMALL_MBB = (ROOT / "tests" / "data" / "small_mbb.toml").read_text()

SECRET = b"SECRET=hunter2"

#: Contents a data file of the wrong kind may have: text a parser quotes back, binary junk
#: (a NumPy header's magic with the secret after it), and the secret on a line a Gmsh
#: reader reads after a valid header ("Unexpected line 'SECRET=hunter2'").
CONTENTS = {
    "text": SECRET + b"\nPATH=/usr/bin\n",
    "binary": b"\x93NUMPY\x01\x00" + SECRET + b"\x00\xff\xfe" + bytes(range(256)),
    "gmsh": b"$MeshFormat\n2.2 0 8\n$EndMeshFormat\n" + SECRET + b"\n",
}

THERMAL = """
[mesh]
type = "rectangle"
size = [2.0, 1.0]
cells = [4, 2]

[physics]
type = "elasticity"

[material]
E = 1.0
nu = 0.3
alpha = 1e-3

[[supports]]
group = "left"

[[loads]]
type = "point"
point = [2.0, 0.0]
value = [0.0, -1.0]

[thermal]
temperature = "{file}"
"""


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def leaked(output: str) -> bool:
    return "hunter2" in output or "SECRET" in output


def secret_file(folder: Path, name: str, content: str) -> Path:
    path = folder / name
    path.write_bytes(CONTENTS[content])
    return path


def error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    assert not leaked(result.output), result.output
    return lines[0]


@pytest.mark.parametrize("name, content", [
    ("t.txt", "text"), ("t.csv", "text"), ("t.npy", "text"), ("t.npy", "binary"),
    ("t.txt", "binary"), ("t.dat", "binary"),
])
def test_a_temperature_file_of_the_wrong_kind_is_named_not_echoed(tmp_path, name, content):
    data = secret_file(tmp_path, name, content)
    config = tmp_path / "config.toml"
    config.write_text(THERMAL.format(file=data.name))
    line = error_line(run("solve", config, "--out", tmp_path / "out"))
    assert "[thermal]" in line and f"the temperature file {data}" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not Path("/proc/self/environ").is_file(), reason="no /proc here")
def test_proc_self_environ_as_the_temperature_file_is_not_echoed(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(THERMAL.format(file="/proc/self/environ"))
    line = error_line(run("solve", config, "--out", tmp_path / "out"))
    assert "[thermal]" in line and "the temperature file" in line and "environ" in line
    entries = Path("/proc/self/environ").read_bytes().split(b"\0")
    shown = [entry for entry in entries if entry and entry.decode(errors="replace") in line]
    assert not shown


@pytest.mark.parametrize("name, content", [
    ("m.msh", "gmsh"), ("m.msh", "binary"), ("m.vtu", "text"), ("m.vtk", "binary"),
    ("m.xdmf", "text"),
])
def test_a_mesh_file_of_the_wrong_kind_is_named_not_echoed(tmp_path, name, content):
    mesh = secret_file(tmp_path, name, content)
    config = tmp_path / "config.toml"
    config.write_text(SMALL_MBB.replace('type = "rectangle"\nsize = [24.0, 8.0]\n'
                                        'cells = [24, 8]', f'file = "{name}"'))
    line = error_line(run("solve", config, "--out", tmp_path / "out"))
    assert "mesh.file" in line and f"cannot read {mesh}" in line


@pytest.mark.parametrize("name, content", [("d.vtu", "text"), ("d.msh", "gmsh")])
def test_an_initial_design_or_design_file_of_the_wrong_kind_is_named_not_echoed(
        tmp_path, name, content):
    design = secret_file(tmp_path, name, content)
    config = tmp_path / "config.toml"
    config.write_text(SMALL_MBB + f'\n[design]\ninitial = "{name}"\n')
    line = error_line(run("optimize", config, "--out", tmp_path / "out"))
    assert "design.initial" in line and f"cannot read {design}" in line
    config.write_text(SMALL_MBB)
    line = error_line(run("sensitivity", config, "--wrt", "density", "--design", design,
                          "--out", tmp_path / "out"))
    assert "--design" in line and f"cannot read {design}" in line


def test_a_config_file_of_binary_junk_is_named_not_echoed(tmp_path):
    config = secret_file(tmp_path, "config.toml", "binary")
    line = error_line(run("solve", config, "--out", tmp_path / "out"))
    assert f"cannot read config file {config}: not UTF-8 text" in line
