"""The wheel: built from the repository and installed in a fresh virtual environment, it runs
``fesens demo``, the L-bracket presets and ``fesens docs`` from a folder outside the
repository, so everything they read is package data.

The fresh environment gets fesens from the wheel only. Its third-party dependencies come
from the environment running the tests: a ``.pth`` file names that environment's
site-packages, whose own ``.pth`` files (among them the editable install of this checkout)
are not run, and the first test checks that ``fesens`` is imported from the wheel. Building
needs ``pip`` and the build requirements (from an index or a local wheel cache); without
them the tests are skipped.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Not copied to the build folder: environments, build products, results, caches.
IGNORED = shutil.ignore_patterns(".git", ".venv", "build", "dist", "results", "*.egg-info",
                                 "__pycache__", ".*_cache", ".hypothesis")
#: The environment of every command: no PYTHONPATH, which could put a checkout first.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def run(*args, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=timeout)


class Installed:
    """A virtual environment with the wheel installed: its folder, python and fesens."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.bin = folder / ("Scripts" if os.name == "nt" else "bin")
        self.python = self.bin / "python"
        self.fesens = self.bin / "fesens"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    tmp = tmp_path_factory.mktemp("packaging")
    source = tmp / "source"  # a copy, so that building leaves no build/ in the checkout
    shutil.copytree(ROOT, source, ignore=IGNORED)
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir",
                tmp / "wheels", source, cwd=tmp, timeout=300)
    if built.returncode != 0:
        last = (built.stderr.strip().splitlines() or ["(no output)"])[-1]
        pytest.skip(f"`pip wheel --no-deps` cannot build fesens here: {last}")
    (wheel,) = (tmp / "wheels").glob("fesens-*.whl")
    env = Installed(tmp / "venv")
    venv.create(env.folder, with_pip=False)
    site = run(env.python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
               cwd=tmp).stdout.strip()
    dependencies = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (Path(site) / "test_dependencies.pth").write_text("\n".join(dependencies) + "\n")
    install = run(sys.executable, "-m", "pip", "--python", env.python, "install", "--no-deps",
                  "--no-index", wheel, cwd=tmp)
    assert install.returncode == 0, install.stderr
    return env


def test_fesens_is_imported_from_the_wheel(installed, tmp_path):
    result = run(installed.python, "-c", "import fesens; print(fesens.__file__)", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip()).is_relative_to(installed.folder)


def test_demo_runs_outside_the_repository(installed, tmp_path):
    result = run(installed.fesens, "demo", "--out", "demo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "reaction on 'top'" in result.stdout
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == \
        ["lbracket.vtu", "lbracket_von_mises.png"]


def test_lbracket_preset_optimizes_outside_the_repository(installed, tmp_path):
    result = run(installed.fesens, "optimize", "--preset", "lbracket", "--max-iter", 2,
                 "--out", "lbracket", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "lbracket"
    assert {"design.vtu", "design.png", "convergence.png", "history.csv", "summary.json",
            "config.toml", "checkpoint.npz"} <= {p.name for p in out.iterdir()}
    with open(out / "history.csv", newline="") as file:
        assert len(list(csv.DictReader(file))) == 2
    assert json.loads((out / "summary.json").read_text())["iterations"] == 2


def test_stress_preset_solves_outside_the_repository(installed, tmp_path):
    result = run(installed.fesens, "solve", "--preset", "lbracket_stress", "--out", "solve",
                 "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "solve" / "solution.vtu").is_file()


def test_the_documentation_named_in_help_is_installed(installed, tmp_path):
    help_text = run(installed.fesens, "optimize", "--help", cwd=tmp_path).stdout
    assert "fesens docs config" in help_text and "docs/" not in help_text
    result = run(installed.fesens, "docs", "config", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "[mesh]" in result.stdout


def test_a_config_naming_the_packaged_mesh_runs_outside_the_repository(installed, tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "bracket.toml").write_text(
        '[mesh]\npackaged = "lbracket"\n\n[physics]\nthickness = 10.0\n\n'
        '[[supports]]\ngroup = "top"\n\n'
        '[[loads]]\ntype = "traction"\ngroup = "load"\nvalue = [0.0, -10.0]\n')
    result = run(installed.fesens, "solve", "configs/bracket.toml", "--out", "solve",
                 "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "solve" / "solution.vtu").is_file()


def test_a_dumped_preset_runs_from_another_folder(installed, tmp_path):
    dumped = run(installed.fesens, "optimize", "--preset", "lbracket_stress", "--dump-config",
                 cwd=tmp_path)
    assert dumped.returncode == 0, dumped.stderr
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "mine.toml").write_text(dumped.stdout)
    (tmp_path / "elsewhere").mkdir()
    result = run(installed.fesens, "solve", "../configs/mine.toml", "--out", "solve", "--quiet",
                 cwd=tmp_path / "elsewhere")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "elsewhere" / "solve" / "solution.vtu").is_file()
