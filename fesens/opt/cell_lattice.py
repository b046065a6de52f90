"""The lattice of a structured mesh's cells, for maps that work layer by layer or column by
column (the overhang filter of :mod:`fesens.opt.overhang`, extrusion in
:mod:`fesens.opt.design_maps`).

Such a map needs the neighbours of a cell in the layer below it, or every cell of its column:
the cells must be the quadrilaterals or hexahedra of a full tensor lattice of points
(:func:`~fesens.mesh.structured.lattice_of`, as :func:`~fesens.mesh.rectangle` and
:func:`~fesens.mesh.box` make them), one cell per lattice interval, evenly spaced per axis so
that a layer of cells is a plane of the lattice.
"""

from __future__ import annotations

import numpy as np

from fesens.errors import MeshError
from fesens.mesh.mesh import Mesh
from fesens.mesh.structured import lattice_of
from fesens.opt.grid_filter import CentroidLattice

#: Cells with one cell per lattice interval (their corners are the lattice points).
LATTICE_CELL_TYPES = ("quad4", "hex8")

#: The axes by name, ``x``, ``y``, ``z``.
AXES = "xyz"


def cell_lattice(mesh: Mesh, purpose: str) -> CentroidLattice:
    """The lattice of ``mesh``'s cells: :attr:`~CentroidLattice.shape` cells per axis ``(x, y[,
    z])``, :meth:`~CentroidLattice.to_grid` and :meth:`~CentroidLattice.from_grid` between a
    cell field ``(n_cells,)`` and its array of that shape.

    Parameters
    ----------
    mesh : Mesh
    purpose : str
        What needs the lattice, for the message of a refusal.

    Raises
    ------
    MeshError
        If the cells are not quad4/hex8 cells of a full, evenly spaced tensor lattice.
    """
    why = (f"{purpose} works layer by layer (column by column) on a lattice of cells, so it "
           "needs a structured mesh: quad4 or hex8 cells on a full, evenly spaced tensor "
           "lattice of points, as rectangle() and box() make them")
    if mesh.cell_type not in LATTICE_CELL_TYPES or mesh.dim != mesh.type_info.dim:
        raise MeshError(f"{why}; this mesh has {mesh.cell_type} cells in {mesh.dim}D")
    if lattice_of(mesh) is None:
        raise MeshError(f"{why}; the points of this {mesh.cell_type} mesh do not form a "
                        "full tensor lattice (an unstructured mesh)")
    lattice = CentroidLattice.of(mesh.cell_centroids())
    if lattice is None or len(lattice.shape) != mesh.dim:
        raise MeshError(f"{why}; the cells of this {mesh.cell_type} mesh are not evenly "
                        "spaced (a graded lattice)")
    return lattice


def axis_index(axis: str | int, dim: int) -> int:
    """The index ``0 .. dim − 1`` of ``axis`` (``'x'``, ``'y'``, ``'z'`` or the index).

    Raises
    ------
    ValueError
        For an axis the space of dimension ``dim`` does not have.
    """
    index = AXES.find(axis) if isinstance(axis, str) and len(axis) == 1 else axis
    if isinstance(index, bool) or not isinstance(index, int | np.integer) \
            or not 0 <= index < dim:
        raise ValueError(f"unknown axis {axis!r} in {dim}D: use one of "
                         f"{', '.join(map(repr, AXES[:dim]))} (or 0 .. {dim - 1})")
    return int(index)
