"""The shape of a final design for manufacturing: the 0.5 level of its physical density,
as an STL surface (3D) or an SVG outline (2D).

Both work on the lattice of a structured mesh's cells (quad4 or hex8 cells on a full, evenly
spaced tensor lattice, :func:`~fesens.opt.cell_lattice.cell_lattice`): the cell densities
are samples at the cell centres, padded by one layer of void all around, so that the level
set is closed wherever the design touches the domain's boundary. Between two centres the
level is interpolated linearly, so the surface lies within half a cell of the faces between
solid (ρ > 0.5) and void cells. An unstructured mesh is refused with the reason
(:class:`~fesens.errors.MeshError`): interpolating it onto a lattice first would hide where
the cells are.

The surface is scikit-image's ``measure.marching_cubes`` (Lewiner's variant, whose
triangles form a closed, consistently oriented surface of a closed level set) written by
trimesh, which also checks it (``is_watertight``, ``volume``); the outline is contourpy's
level lines (matplotlib's contouring engine), written as SVG paths in the mesh's units.
``pip install 'fesens[export]'`` installs scikit-image and trimesh.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fesens.errors import FesensError, MeshError
from fesens.mesh.mesh import Mesh
from fesens.opt.cell_lattice import cell_lattice
from fesens.output.folder import atomic_write_text

#: The density level whose set is the solid.
LEVEL = 0.5


class ExportUnavailableError(FesensError, ImportError):
    """An optional library of the design export is not installed."""


@dataclass(frozen=True)
class PaddedLattice:
    """Cell densities on their lattice, with one layer of void around it.

    Attributes
    ----------
    values : numpy.ndarray
        ``(n_x + 2, n_y + 2[, n_z + 2])`` the densities, 0 in the padding.
    origin : numpy.ndarray
        ``(dim,)`` the coordinates of ``values[0, 0[, 0]]`` (a padding cell's centre).
    spacing : numpy.ndarray
        ``(dim,)`` the cell size per axis.
    """

    values: np.ndarray
    origin: np.ndarray
    spacing: np.ndarray


def padded_lattice(mesh: Mesh, density: np.ndarray, purpose: str) -> PaddedLattice:
    """The densities ``(n_cells,)`` of ``mesh``'s cells on their padded lattice.

    Raises
    ------
    MeshError
        For a mesh that is not a lattice of quad4/hex8 cells (``purpose`` names what needs
        it), or a density of the wrong size.
    """
    density = np.asarray(density, dtype=float)
    if density.shape != (mesh.n_cells,):
        raise MeshError(f"{purpose}: {density.size} densities for {mesh.n_cells} cells")
    lattice = cell_lattice(mesh, purpose)
    lower, upper = (np.asarray(bound, dtype=float) for bound in mesh.bounding_box())
    spacing = (upper - lower) / np.asarray(lattice.shape)
    values = np.pad(lattice.to_grid(density), 1, constant_values=0.0)
    return PaddedLattice(values, lower - 0.5 * spacing, spacing)


def _require(module: str, package: str):
    """Import ``module`` or say what to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ExportUnavailableError(
            f"the design export needs {package}, which is not installed: pip install "
            "'fesens[export]' (scikit-image and trimesh)") from None


def isosurface(mesh: Mesh, density: np.ndarray, level: float = LEVEL):
    """The closed surface ``ρ = level`` of a 3D design, as a ``trimesh.Trimesh``.

    Parameters
    ----------
    mesh : Mesh
        hex8 cells on a lattice.
    density : numpy.ndarray
        ``(n_cells,)`` physical densities.
    level : float
        The density of the surface (0.5).

    Returns
    -------
    trimesh.Trimesh
        ``vertices`` ``(n_vertices, 3)`` in the mesh's coordinates, ``faces``
        ``(n_faces, 3)`` oriented outwards; empty when no cell exceeds ``level``.

    Raises
    ------
    MeshError
        Not a 3D lattice of hex8 cells.
    ExportUnavailableError
        scikit-image or trimesh missing.
    """
    if mesh.dim != 3:
        raise MeshError(f"an STL surface needs a 3D design; this mesh is {mesh.dim}D (a 2D "
                        "design's outline is design_outline.svg)")
    measure = _require("skimage.measure", "scikit-image")
    trimesh = _require("trimesh", "trimesh")
    grid = padded_lattice(mesh, density, "the STL export")
    if not np.any(grid.values > level):
        return trimesh.Trimesh(np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64))
    vertices, faces, _, _ = measure.marching_cubes(grid.values, level,
                                                   spacing=tuple(grid.spacing))
    # marching_cubes orients its triangles towards increasing values (the solid); an STL's
    # normals point out of it
    surface = trimesh.Trimesh(vertices + grid.origin, faces[:, ::-1], process=True)
    surface.merge_vertices()
    return surface


def write_stl(surface, path: str | Path) -> Path:
    """Write a surface of :func:`isosurface` as binary STL, atomically."""
    import os
    import uuid

    from fesens.errors import writing

    path = Path(path)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with writing(path, temporary):
        temporary.write_bytes(surface.export(file_type="stl"))
        os.replace(temporary, path)
    return path


def outline(mesh: Mesh, density: np.ndarray, level: float = LEVEL) -> list[np.ndarray]:
    """The closed level lines ``ρ = level`` of a 2D design.

    Parameters
    ----------
    mesh : Mesh
        quad4 cells on a lattice.
    density : numpy.ndarray
        ``(n_cells,)`` physical densities.

    Returns
    -------
    list of numpy.ndarray
        One ``(n_points, 2)`` closed polygon (last point = first) per boundary curve: outer
        boundaries counter-clockwise and holes clockwise (solid on the left), so the sum of
        their signed areas (:func:`enclosed_area`) is the solid's area.

    Raises
    ------
    MeshError
        Not a 2D lattice of quad4 cells.
    """
    import contourpy

    if mesh.dim != 2:
        raise MeshError(f"an outline needs a 2D design; this mesh is {mesh.dim}D (a 3D "
                        "design's surface is design.stl)")
    grid = padded_lattice(mesh, density, "the outline export")
    x, y = (grid.origin[a] + grid.spacing[a] * np.arange(grid.values.shape[a])
            for a in range(2))
    # contourpy takes z[j, i] at (x[i], y[j]); its filled regions are closed polygons,
    # outer boundaries counter-clockwise and holes clockwise
    generator = contourpy.contour_generator(x, y, grid.values.T, fill_type="OuterOffset")
    points, offsets = generator.filled(level, np.inf)
    return [np.asarray(p[a:b], dtype=float) for p, o in zip(points, offsets, strict=True)
            for a, b in zip(o[:-1], o[1:], strict=True)]


def _signed_area(polygon: np.ndarray) -> float:
    """Shoelace area of a closed polygon, positive when counter-clockwise."""
    x, y = polygon[:, 0], polygon[:, 1]
    return 0.5 * float(np.dot(x[:-1], y[1:]) - np.dot(x[1:], y[:-1]))


def enclosed_area(polygons: list[np.ndarray]) -> float:
    """The solid's area inside the outline: the sum of the polygons' signed areas."""
    return sum(_signed_area(p) for p in polygons)


def enclosed_volume(surface) -> float:
    """The volume a closed surface encloses: the divergence theorem's sum of the signed
    tetrahedra from the origin to each triangle, ``Σ v0 · (v1 × v2) / 6`` (trimesh's
    ``volume`` computes the centre of mass as well, dividing by the volume, which warns
    for a surface that encloses none)."""
    corners = np.asarray(surface.vertices, dtype=float)[np.asarray(surface.faces)]
    if not len(corners):
        return 0.0
    return float(np.einsum("ij,ij->", corners[:, 0],
                           np.cross(corners[:, 1], corners[:, 2])) / 6.0)


def outline_length(polygons: list[np.ndarray]) -> float:
    """The total length of the outline's curves."""
    return float(sum(np.sum(np.linalg.norm(np.diff(p, axis=0), axis=1)) for p in polygons))


def write_outline_svg(polygons: list[np.ndarray], mesh: Mesh, path: str | Path) -> Path:
    """Write the outline as an SVG of the mesh's bounding box, one unit per mesh unit (y up,
    as in the mesh: the SVG's y axis is flipped), one closed path per curve, filled by the
    even-odd rule so that holes stay open."""
    lower, upper = (np.asarray(bound, dtype=float)[:2] for bound in mesh.bounding_box())
    width, height = upper - lower

    def point(p: np.ndarray) -> str:
        return f"{p[0] - lower[0]:.6g},{upper[1] - p[1]:.6g}"

    data = " ".join("M " + " L ".join(point(p) for p in polygon[:-1]) + " Z"
                    for polygon in polygons)
    text = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.6g}" '
            f'height="{height:.6g}" viewBox="0 0 {width:.6g} {height:.6g}">\n'
            f'  <path d="{data}" fill="black" fill-rule="evenodd" stroke="none"/>\n'
            "</svg>\n")
    return atomic_write_text(Path(path), text)
