"""A package "installed" into a folder for a test: its module and a ``.dist-info`` that
declares its entry points, as pip leaves them (no pip run); the folder then goes on
``sys.path``."""

from pathlib import Path


def install(folder: Path, package: str, source: str, distribution: str,
            entry_points: str) -> None:
    """Write ``package/__init__.py`` (``source``) and ``package-1.0.dist-info`` naming the
    distribution ``distribution`` with ``entry_points`` (the text of ``entry_points.txt``)
    into ``folder``."""
    (folder / package).mkdir()
    (folder / package / "__init__.py").write_text(source, encoding="utf-8")
    info = folder / f"{package}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\n"
                                   "Version: 1.0\n", encoding="utf-8")
    (info / "top_level.txt").write_text(f"{package}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
