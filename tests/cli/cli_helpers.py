"""Driving ``fesens`` with click's CliRunner, and reading its results folders."""

import csv
from pathlib import Path

from click.testing import CliRunner, Result

from fesens.cli import cli

ROOT = Path(__file__).resolve().parents[2]
SMALL_MBB = (ROOT / "tests" / "data" / "small_mbb.toml").read_text()


def run(*args) -> Result:
    """``fesens ARGS`` in-process; exceptions other than exits are re-raised."""
    result = CliRunner().invoke(cli, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def write_config(folder: Path, text: str = SMALL_MBB, name: str = "small.toml") -> Path:
    path = Path(folder) / name
    path.write_text(text, encoding="utf-8")
    return path


def edit(text: str, old: str, new: str) -> str:
    """``text`` with the first ``old`` (which must be there) replaced by ``new``."""
    assert old in text, f"{old!r} not in the config"
    return text.replace(old, new, 1)


def history(folder: Path) -> list[dict]:
    with open(Path(folder) / "history.csv", newline="") as file:
        return list(csv.DictReader(file))


def listing(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` (hidden ones too) with its content."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(Path(folder).rglob("*"))
            if p.is_file()}
