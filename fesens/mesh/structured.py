"""Recognise a structured mesh: its points form a full tensor lattice.

Geometric multigrid (:mod:`fesens.solvers.multigrid`) coarsens a lattice of points, so it
needs to know, for every lattice point ``(a, b[, c])``, which mesh node sits there.
:func:`lattice_of` finds that from the coordinates alone, so meshes of the generators
:func:`~fesens.mesh.rectangle` and :func:`~fesens.mesh.box` (and the same meshes read back
from a file, renumbered or not) are recognised; the node lattice of a quadratic mesh is
twice as fine as its cells (quad9, hex27, tri6, tet10 fill it; quad8 and hex20 do not, as
they skip face and cell centres).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fesens.errors import MeshError
from fesens.mesh.mesh import Mesh

#: Coordinates closer than this fraction of the mesh extent are one lattice line.
_COORDINATE_RTOL = 1e-9


@dataclass(frozen=True)
class Lattice:
    """The tensor lattice of a mesh's points.

    Attributes
    ----------
    shape : tuple of int
        Points per axis ``(Nx, Ny[, Nz])``.
    point_ids : numpy.ndarray
        Mesh node at each lattice point, ``(Nx * Ny [* Nz],)``, lattice point
        ``(a, b[, c])`` at ``a + Nx * (b + Ny * c)`` (x fastest).
    """

    shape: tuple[int, ...]
    point_ids: np.ndarray


def lattice_of(mesh: Mesh) -> Lattice | None:
    """The lattice of ``mesh``'s points, or None when they do not form one.

    The points form a lattice when their distinct coordinates per axis, ``N_d`` of them,
    give exactly ``prod(N_d)`` distinct points, every one of them a mesh node, and every
    cell spans at most two lattice intervals per axis (one for linear cells).

    Parameters
    ----------
    mesh : Mesh

    Returns
    -------
    Lattice or None
    """
    points = mesh.points
    extent = float(np.ptp(points, axis=0).max()) if mesh.n_points else 0.0
    if extent == 0.0:
        return None
    indices, shape = [], []
    for column in points.T:
        lines = np.round(column / (_COORDINATE_RTOL * extent)).astype(np.int64)
        values, index = np.unique(lines, return_inverse=True)
        indices.append(index.ravel())
        shape.append(values.size)
    if int(np.prod(shape)) != mesh.n_points or min(shape) < 2:
        return None
    strides = np.concatenate([[1], np.cumprod(shape[:-1])])
    flat = np.stack(indices, axis=1) @ strides
    point_ids = np.full(mesh.n_points, -1, dtype=np.int64)
    point_ids[flat] = np.arange(mesh.n_points)
    if np.any(point_ids < 0):  # two nodes on one lattice point
        return None
    cell_index = np.stack(indices, axis=1)[mesh.cells]  # (n_cells, nodes, dim)
    span = cell_index.max(axis=1) - cell_index.min(axis=1)
    if span.size and int(span.max()) > 2:
        return None
    return Lattice(tuple(int(n) for n in shape), point_ids)


def require_lattice(mesh: Mesh, purpose: str) -> Lattice:
    """:func:`lattice_of` ``mesh``, or a :class:`~fesens.errors.MeshError` saying why
    ``purpose`` needs one and what to use instead.

    Raises
    ------
    MeshError
        If the points of ``mesh`` do not form a lattice.
    """
    lattice = lattice_of(mesh)
    if lattice is None:
        raise MeshError(
            f"{purpose} needs a structured mesh (its points a full tensor lattice, as "
            "rectangle() and box() make with quad4, quad9, tri3, tri6, hex8, hex27, tet4 or "
            f"tet10 cells); this {mesh.cell_type} mesh of {mesh.n_points} points is not one. "
            "Use solver 'cg' with preconditioner 'amg' (algebraic multigrid) instead.")
    return lattice
