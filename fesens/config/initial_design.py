"""``[design] initial``: where a design run starts.

A number in [0, 1] starts from that uniform design; a path, from the cell field ``density``
of a VTU file on the config's mesh (or of the ``design.vtu`` in an earlier run's results
folder). Without the key a run starts from the uniform design at the volume fraction. The
densities become design variables cell by cell (with a design map, the mean over each group
of tied cells); passive cells keep their fixed values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fesens.config.checks import ConfigError, invalid, number, show
from fesens.errors import MeshError
from fesens.mesh import Mesh, read_cell_field

#: Densities may stray this far outside [0, 1] (filters and projections round a little).
DENSITY_SLACK = 1e-9

_EXPECTED = ("a number in [0, 1] (a uniform start), or the path of a VTU file with the cell "
             "field density on this mesh or of an earlier run's results folder")


def checked_density(density: np.ndarray, setting: str) -> np.ndarray:
    """``density`` ``(n_cells,)`` clipped to [0, 1].

    Raises
    ------
    ConfigError
        Values that are not finite or lie outside [0, 1]; ``setting`` names where they
        came from (``--design PATH``, ``design.initial = "PATH"``).
    """
    density = np.asarray(density, dtype=float)
    if density.ndim != 1 or not np.all(np.isfinite(density)) \
            or density.min(initial=0.0) < -DENSITY_SLACK \
            or density.max(initial=0.0) > 1.0 + DENSITY_SLACK:
        low, high = np.nanmin(density, initial=0.0), np.nanmax(density, initial=0.0)
        raise ConfigError(f"{setting}: the density must be one value in [0, 1] per cell "
                          f"(found {low:.6g} to {high:.6g})")
    return np.clip(density, 0.0, 1.0)


def read_density(path: str | Path, mesh: Mesh, setting: str) -> np.ndarray:
    """The cell field ``density`` ``(n_cells,)`` of a VTU file, or of the ``design.vtu`` of
    a results folder, on ``mesh``.

    Raises
    ------
    ConfigError
        No such file, not a field of this mesh (another cell count), or densities outside
        [0, 1]; the message starts with ``setting``.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "design.vtu"
    if not path.is_file():
        raise ConfigError(f"{setting}: no such file {path} (give a results folder of "
                          "`fesens optimize` or its design.vtu)")
    try:
        density = read_cell_field(path, "density", mesh)
    except MeshError as err:
        raise ConfigError(f"{setting}: {err}") from None
    return checked_density(density, setting)


def check_initial(value: Any, mesh: Mesh, base_dir: Path) -> float | str:
    """``design.initial``: a number in [0, 1], or a path (relative to the config's folder)
    whose densities fit ``mesh``, returned absolute.

    Raises
    ------
    ConfigError
        Anything else, naming the key.
    """
    if isinstance(value, str):
        path = (Path(base_dir) / value).resolve()
        read_density(path, mesh, f"design.initial = {show(value)}")
        return str(path)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid("design.initial", value, _EXPECTED)
    return number(0.0, 1.0)("design.initial", value)


def initial_design(design: dict, mesh: Mesh, problem) -> np.ndarray | None:
    """The start ``(n_design,)`` of ``problem`` (this rank's part in a distributed run) for
    a checked ``[design]`` table, or None for the default start.

    Parameters
    ----------
    design : dict
        The resolved ``[design]`` table.
    mesh : Mesh
        The whole mesh.
    problem : DesignProblem
    """
    initial = design.get("initial")
    if initial is None:
        return None
    if not isinstance(initial, str):
        return np.full(problem.n_design, float(initial))
    density = read_density(initial, mesh, f"design.initial = {show(initial)}")
    groups = problem.design_map
    if groups is not None:  # a group's variable starts at its cells' mean
        return groups.apply_transpose(density) / groups.apply_transpose(np.ones_like(density))
    part = problem.part  # a rank's cells: their global ids
    cells = problem.design if part is None else part.cells[problem.design]
    return density[cells]
