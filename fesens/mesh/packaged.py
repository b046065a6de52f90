"""The meshes shipped inside the package (``fesens/data/meshes/*.msh``), by name.

A packaged mesh is named by its file's stem: ``"lbracket"`` is ``fesens/data/meshes/
lbracket.msh``. The name works from any folder and after ``pip install``, where a path
into the source tree does not; config files give it as ``[mesh] packaged = "lbracket"``.

>>> packaged_mesh_names()
('lbracket',)
>>> mesh = read_mesh(packaged_mesh_path("lbracket"))     # doctest: +SKIP
"""

from __future__ import annotations

import difflib
from pathlib import Path

from fesens.errors import MeshError

#: The folder of the packaged meshes (package data, installed with fesens).
PACKAGED_MESH_DIR = Path(__file__).resolve().parents[1] / "data" / "meshes"


def packaged_mesh_names() -> tuple[str, ...]:
    """The names of the packaged meshes (their files' stems), sorted."""
    return tuple(sorted(path.stem for path in PACKAGED_MESH_DIR.glob("*.msh")))


def packaged_mesh_path(name: str) -> Path:
    """The file of the packaged mesh ``name``.

    Parameters
    ----------
    name : str
        One of :func:`packaged_mesh_names`, e.g. ``"lbracket"``.

    Returns
    -------
    Path
        The absolute path of its ``.msh`` file.

    Raises
    ------
    MeshError
        ``name`` is no packaged mesh; the message suggests the nearest name and lists them.
    """
    names = packaged_mesh_names()
    if name not in names:
        nearest = difflib.get_close_matches(str(name), names, n=1)
        hint = f"; did you mean {nearest[0]!r}?" if nearest else ""
        raise MeshError(f"no packaged mesh named {name!r}{hint} (packaged meshes: "
                        f"{', '.join(names)})")
    return PACKAGED_MESH_DIR / f"{name}.msh"
