"""The ``[mesh]`` section: its keys per mesh type and the mesh a checked table makes
(generated, read from a file relative to the config, or shipped with fesens by name)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fesens.config.checks import (
    REQUIRED,
    ConfigError,
    Key,
    boolean,
    choice,
    integers,
    number,
    numbers,
    show,
    string,
)
from fesens.config.memory import check_mesh_memory, out_of_memory
from fesens.errors import MeshError
from fesens.mesh import Mesh, box, packaged_mesh_names, packaged_mesh_path, read_mesh, rectangle
from fesens.mesh.cell_types import BAR_CELL_TYPES, VOLUME_CELL_TYPES
from fesens.mesh.generators import PLANAR_CELL_TYPES, SOLID_CELL_TYPES
from fesens.mesh.ground_structure import ground_structure
from fesens.physics import PHYSICS

MESH = {
    "rectangle": {
        "size": Key(numbers(2, 0.0, low_open=True), REQUIRED, "side lengths [lx, ly]"),
        "cells": Key(integers(2), REQUIRED, "cells along x and y [nx, ny]"),
        "cell_type": Key(choice(*PLANAR_CELL_TYPES), "quad4", " | ".join(PLANAR_CELL_TYPES)),
        "origin": Key(numbers(2), [0.0, 0.0], "lower-left corner"),
        "allow_large": Key(boolean(), None, "build the mesh even if its memory estimate "
                                            "exceeds the available memory"),
    },
    "box": {
        "size": Key(numbers(3, 0.0, low_open=True), REQUIRED, "side lengths [lx, ly, lz]"),
        "cells": Key(integers(3), REQUIRED, "cells along x, y, z [nx, ny, nz]"),
        "cell_type": Key(choice(*SOLID_CELL_TYPES), "hex8", " | ".join(SOLID_CELL_TYPES)),
        "origin": Key(numbers(3), [0.0, 0.0, 0.0], "lowest corner"),
        "allow_large": Key(boolean(), None, "build the mesh even if its memory estimate "
                                            "exceeds the available memory"),
    },
    "ground_structure": {
        "size": Key(numbers(2, 0.0, low_open=True), REQUIRED, "side lengths [lx, ly]"),
        "cells": Key(integers(2), REQUIRED, "grid cells along x and y [nx, ny]"),
        "reach": Key(number(1.0), None,
                     "longest candidate bar in grid steps (default: every pair)"),
        "origin": Key(numbers(2), [0.0, 0.0], "lower-left corner"),
    },
    "file": {  # exactly one of file and packaged (_mesh_file)
        "file": Key(string(), None, "mesh file (Gmsh .msh, .vtu, ...), relative to the "
                                    "config file"),
        "packaged": Key(choice(*packaged_mesh_names()), None,
                        "a mesh shipped with fesens, by name: "
                        + ", ".join(packaged_mesh_names())),
        "cell_type": Key(choice(*VOLUME_CELL_TYPES), None,
                         "use the cells of this type (default: highest dimension)"),
    },
}


def make_mesh(spec: dict, base_dir: Path, solver: dict) -> tuple[Mesh, str]:
    kind = spec["type"]
    check_mesh_memory(spec, solver)
    try:
        if kind == "rectangle":
            (lx, ly), (nx, ny) = spec["size"], spec["cells"]
            return rectangle(nx, ny, lx, ly, spec["cell_type"], spec["origin"]), \
                f"rectangle {nx}x{ny}"
        if kind == "box":
            (lx, ly, lz), (nx, ny, nz) = spec["size"], spec["cells"]
            return box(nx, ny, nz, lx, ly, lz, spec["cell_type"], spec["origin"]), \
                f"box {nx}x{ny}x{nz}"
        if kind == "ground_structure":
            (lx, ly), (nx, ny) = spec["size"], spec["cells"]
            return ground_structure((nx, ny), (lx, ly), reach=spec.get("reach"),
                                    origin=spec["origin"]), f"ground structure {nx}x{ny}"
    except MeshError as err:
        raise ConfigError(f"mesh: {err}") from None
    except MemoryError as err:
        raise MemoryError(out_of_memory(spec, solver, err)) from None
    path = mesh_file(spec, base_dir)
    try:
        return read_mesh(path, spec.get("cell_type")), path.name
    except MeshError as err:
        raise ConfigError(f"mesh.file = {show(str(path))}: {err}") from None


def check_cells_fit(spec: dict, mesh: Mesh, physics: str) -> None:
    """Refuse a mesh whose cells are not the kind the physics discretises: bars (line2
    cells) for a physics that declares ``bars``, volume cells for the others. Checked with
    the config, so that every command (a study's base too) refuses it before any work.

    Parameters
    ----------
    spec : dict
        The checked ``[mesh]`` table.
    mesh : Mesh
        Its mesh.
    physics : str
        ``physics.type``.

    Raises
    ------
    ConfigError
        Naming ``physics.type``, ``mesh.type`` and the physics that fit this mesh.
    """
    bars = mesh.cell_type in BAR_CELL_TYPES
    if PHYSICS.get(physics).bars == bars:
        return
    wanted = "bars (line2 cells)" if not bars else "volume cells"
    fitting = ", ".join(show(cls.name) for cls in PHYSICS if cls.bars == bars)
    raise ConfigError(f"physics.type = {show(physics)} needs a mesh of {wanted}, but mesh.type "
                      f"= {show(spec['type'])} gives {mesh.cell_type} cells: give a [mesh] of "
                      f"{wanted}, or a physics.type for this mesh ({fitting})")


def mesh_file(spec: dict, base_dir: Path) -> Path:
    """The file of a ``type = "file"`` mesh: ``packaged``, a mesh shipped with fesens, or
    ``file``, relative to ``base_dir`` (written back absolute, so that the resolved config
    runs from any folder)."""
    if "packaged" in spec and "file" in spec:
        raise ConfigError(f"mesh.file = {show(spec['file'])} and mesh.packaged = "
                          f"{show(spec['packaged'])} name two meshes: keep one of them")
    if "packaged" in spec:
        return packaged_mesh_path(spec["packaged"])
    if "file" not in spec:
        raise ConfigError("missing key 'mesh.file' or 'mesh.packaged': give file = \"PATH\" "
                          "(a mesh file, relative to the config file) or packaged = \"NAME\" "
                          f"(a mesh shipped with fesens: {', '.join(packaged_mesh_names())})")
    path = Path(spec["file"]).expanduser()
    path = (path if path.is_absolute() else base_dir / path).resolve()
    if not path.is_file():
        raise ConfigError(f"mesh.file = {show(spec['file'])}: no such file ({path})")
    spec["file"] = str(path)
    return path


def mesh_type(raw: Any) -> Any:
    """The default ``mesh.type``: ``"file"`` for a table that names a file or a packaged
    mesh, none otherwise."""
    named = isinstance(raw, dict) and ("file" in raw or "packaged" in raw)
    return "file" if named else REQUIRED
