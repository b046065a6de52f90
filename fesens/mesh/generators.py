"""Structured and mapped mesh generators with named sides.

Every generator meshes a *lattice*: a structured grid of points on the unit square or
cube, mapped onto the physical domain. Lattice cells are filled with one quad/hex or
with simplices (2 triangles or the 6 Kuhn tetrahedra around the main diagonal, the same
split in every lattice cell, hence conforming); quadratic cells take their mid-edge
nodes from a lattice twice as fine, so curved sides get curved quadratic cells.

Numbering
---------
* Lattice cell ``(i, j[, k])`` has index ``c = i + nx*j [+ nx*ny*k]`` (x fastest). For
  quad4/hex8 it is cell ``c`` (the ordering top88-style codes rely on); for simplices it
  holds cells ``s*c .. s*c + s - 1`` with ``s`` = 2 (triangles) or 6 (tetrahedra).
* Lattice point ``(a, b[, c])`` has id ``a + Nx*(b [+ Ny*c])`` with ``Nx = nx + 1`` for
  linear and ``2*nx + 1`` for quadratic cells (quad8 and hex20 skip the face and cell
  centres of that fine lattice, which they do not use, and number the rest in that order).

Named sides (node sets and facet sets with the same name; facets carry their owner cell
and are ordered as in the cell's local facet table, i.e. outward):

* :func:`rectangle` / :func:`box`: ``left``/``right`` at x min/max, ``bottom``/``top`` at
  y min/max and, in 3D, ``back``/``front`` at z min/max.
* :func:`quarter_annulus`: ``inner``, ``outer``, ``x_axis`` (y = 0), ``y_axis`` (x = 0).
* :func:`plate_with_hole`: ``hole``, ``right`` (x = L), ``top`` (y = L), ``x_axis``
  (y = 0), ``y_axis`` (x = 0).

All cells are positively oriented (counter-clockwise in 2D, positive Jacobian in 3D).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from itertools import permutations

import numpy as np

from fesens.errors import MeshError
from fesens.mesh import cell_types
from fesens.mesh.mesh import FacetSet, Mesh


def _kuhn_tetrahedra() -> tuple[tuple[tuple[int, int, int], ...], ...]:
    """The 6 tetrahedra sharing the diagonal (0,0,0)-(1,1,1) of the unit cube.

    Tetrahedron ``p`` walks from the origin along the axes in the order of the ``p``-th
    permutation; odd permutations get two vertices swapped to be positively oriented.
    """
    tets = []
    for order in permutations(range(3)):
        vertex = [0, 0, 0]
        path = [tuple(vertex)]
        for axis in order:
            vertex[axis] = 1
            path.append(tuple(vertex))
        if np.linalg.det(np.subtract(path[1:], path[0])) < 0:
            path[1], path[2] = path[2], path[1]
        tets.append(tuple(path))
    return tuple(tets)


#: Corner offsets, in lattice cells, of the cells filling one lattice cell.
_PATTERNS = {
    "quad4": (((0, 0), (1, 0), (1, 1), (0, 1)),),
    "tri3": (((0, 0), (1, 0), (1, 1)), ((0, 0), (1, 1), (0, 1))),
    "hex8": (
        ((0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)),
    ),
    "tet4": _kuhn_tetrahedra(),
}
_LINEAR_TYPE = {
    "tri6": "tri3", "quad8": "quad4", "quad9": "quad4", "tet10": "tet4", "hex20": "hex8",
    "hex27": "hex8",
}

#: The cell types :func:`rectangle` (and the other planar generators) and :func:`box` make;
#: the config's generated meshes offer the same (``mesh.cell_type``).
PLANAR_CELL_TYPES = ("tri3", "tri6", "quad4", "quad8", "quad9")
SOLID_CELL_TYPES = ("hex8", "tet4", "tet10", "hex20", "hex27")


@cache
def _node_offsets(name: str) -> np.ndarray:
    """Lattice offsets of every node of the cells filling one (fine) lattice cell.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_cells_per_lattice_cell, n_nodes_per_cell, dim)``; for quadratic types
        in units of the fine lattice (corners at even offsets, mid-edge, face- and
        cell-centre nodes between).
    """
    corners = np.array(_PATTERNS[_LINEAR_TYPE.get(name, name)])
    if name not in _LINEAR_TYPE:
        return corners
    edges = np.array(cell_types.MIDSIDE_EDGES[name])
    midsides = corners[:, edges[:, 0]] + corners[:, edges[:, 1]]
    centres = [2 * corners[:, list(group)].sum(axis=1, keepdims=True) // len(group)
               for group in cell_types.CENTRE_NODES.get(name, ())]
    return np.concatenate([2 * corners, midsides, *centres], axis=1)


def _resolve_type(generator: str, name: str, supported: Sequence[str]) -> str:
    resolved = cell_types.cell_type(name).name
    if resolved not in supported:
        raise MeshError(f"{generator} supports cell types {', '.join(supported)}; got {name!r}")
    return resolved


def _check_positive(**values: float) -> None:
    for name, value in values.items():
        if not (np.isfinite(value) and value > 0):
            raise MeshError(f"{name} must be a positive finite number, got {value!r}")


def _check_divisions(**divisions: int) -> None:
    for name, value in divisions.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise MeshError(f"{name} must be a positive integer, got {value!r}")


def _lattice(divisions: Sequence[int], name: str) -> tuple[np.ndarray, np.ndarray]:
    """Lattice points and cells of ``name`` filling ``divisions`` lattice cells.

    Returns
    -------
    index : numpy.ndarray
        Integer lattice coordinates of each point, shape ``(n_points, dim)``, x fastest.
    cells : numpy.ndarray
        Connectivity, shape ``(n_cells, n_nodes_per_cell)``, numbered as in the module
        docstring.
    """
    scale = 2 if name in _LINEAR_TYPE else 1
    dim = len(divisions)
    shape = np.array([scale * n + 1 for n in divisions])
    strides = np.concatenate([[1], np.cumprod(shape[:-1])])
    index = np.indices(shape[::-1]).reshape(dim, -1)[::-1].T
    origins = scale * np.indices(tuple(divisions)[::-1]).reshape(dim, -1)[::-1].T
    offsets = _node_offsets(name)
    cells = ((origins[:, None, None, :] + offsets[None]) @ strides).reshape(-1, offsets.shape[1])
    used = np.unique(cells)  # serendipity cells leave face and cell centres out
    if len(used) < len(index):
        renumber = np.zeros(len(index), dtype=np.int64)
        renumber[used] = np.arange(len(used))
        index, cells = index[used], renumber[cells]
    return index, cells


def _side_masks(index: np.ndarray, names: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
    """Node masks of the lattice sides: ``names[d] = (lower_name, upper_name)`` of axis d."""
    masks = {}
    for axis, (lower, upper) in enumerate(names):
        masks[lower] = index[:, axis] == 0
        masks[upper] = index[:, axis] == index[:, axis].max()
    return masks


def _mapped_mesh(
    divisions: Sequence[int],
    name: str,
    mapping: Callable[[np.ndarray], np.ndarray],
    sides: Callable[[np.ndarray], dict[str, np.ndarray]],
) -> Mesh:
    """Mesh the unit lattice, map it, and attach the named sides.

    Parameters
    ----------
    divisions : sequence of int
        Lattice cells per axis.
    name : str
        fesens cell type.
    mapping : callable
        Lattice fractions ``(n_points, dim)`` in ``[0, 1]`` to coordinates
        ``(n_points, dim)``; must have a positive Jacobian.
    sides : callable
        Integer lattice coordinates ``(n_points, dim)`` to ``{side name: node mask}``.
    """
    index, cells = _lattice(divisions, name)
    mesh = Mesh(mapping(index / index.max(axis=0)), cells, name)
    facets, owners = mesh.all_facets()
    facet_type = mesh.type_info.facet_type
    for side, mask in sides(index).items():
        on_side = mask[facets].all(axis=1)
        mesh.node_sets[side] = np.flatnonzero(mask)
        mesh.facet_sets[side] = FacetSet(facet_type, facets[on_side], owners[on_side])
    return mesh


def _affine(origin: Sequence[float], lengths: Sequence[float]) -> Callable:
    origin, lengths = np.asarray(origin, dtype=float), np.asarray(lengths, dtype=float)
    if origin.shape != lengths.shape:
        raise MeshError(f"origin must have {len(lengths)} coordinates, got {origin.shape}")
    return lambda fraction: origin + fraction * lengths


def rectangle(
    nx: int,
    ny: int,
    lx: float = 1.0,
    ly: float = 1.0,
    cell_type: str = "quad4",
    origin: Sequence[float] = (0.0, 0.0),
) -> Mesh:
    """Structured mesh of the rectangle ``origin + [0, lx] x [0, ly]``.

    Parameters
    ----------
    nx, ny : int
        Lattice cells along x and y.
    lx, ly : float
        Side lengths.
    cell_type : {"quad4", "quad8", "quad9", "tri3", "tri6"}
        Triangles split each lattice cell along its diagonal from lower left to upper
        right.
    origin : sequence of float
        Lower-left corner, shape ``(2,)``.

    Returns
    -------
    Mesh
        ``nx*ny`` quadrilaterals or ``2*nx*ny`` triangles numbered x fastest (see module
        docstring); sides ``left``, ``right`` (x min/max), ``bottom``, ``top`` (y min/max).
    """
    name = _resolve_type("rectangle", cell_type, PLANAR_CELL_TYPES)
    _check_divisions(nx=nx, ny=ny)
    _check_positive(lx=lx, ly=ly)
    return _mapped_mesh(
        (nx, ny),
        name,
        _affine(origin, (lx, ly)),
        lambda index: _side_masks(index, [("left", "right"), ("bottom", "top")]),
    )


def box(
    nx: int,
    ny: int,
    nz: int,
    lx: float = 1.0,
    ly: float = 1.0,
    lz: float = 1.0,
    cell_type: str = "hex8",
    origin: Sequence[float] = (0.0, 0.0, 0.0),
) -> Mesh:
    """Structured mesh of the box ``origin + [0, lx] x [0, ly] x [0, lz]``.

    Parameters
    ----------
    nx, ny, nz : int
        Lattice cells along x, y and z.
    lx, ly, lz : float
        Side lengths.
    cell_type : {"hex8", "tet4", "tet10", "hex20", "hex27"}
        Tetrahedra split each lattice cell into the 6 Kuhn tetrahedra around its
        diagonal from ``(0, 0, 0)`` to ``(1, 1, 1)`` (conforming across cells).
    origin : sequence of float
        Lowest corner, shape ``(3,)``.

    Returns
    -------
    Mesh
        ``nx*ny*nz`` hexahedra or ``6*nx*ny*nz`` tetrahedra numbered x fastest; sides
        ``left``/``right`` (x min/max), ``bottom``/``top`` (y min/max), ``back``/``front``
        (z min/max).
    """
    name = _resolve_type("box", cell_type, SOLID_CELL_TYPES)
    _check_divisions(nx=nx, ny=ny, nz=nz)
    _check_positive(lx=lx, ly=ly, lz=lz)
    return _mapped_mesh(
        (nx, ny, nz),
        name,
        _affine(origin, (lx, ly, lz)),
        lambda index: _side_masks(index, [("left", "right"), ("bottom", "top"), ("back", "front")]),
    )


def _unit_arc(fraction: np.ndarray) -> np.ndarray:
    """Points ``(cos t, sin t)`` with ``t = fraction * pi/2``, exact at both ends.

    Shape ``(n,) -> (n, 2)``; ``sin(pi/2 (1 - f))`` instead of ``cos`` keeps x exactly 0
    at ``f = 1``.
    """
    return np.column_stack([np.sin(0.5 * np.pi * (1 - fraction)), np.sin(0.5 * np.pi * fraction)])


def quarter_annulus(
    n_radial: int,
    n_angular: int,
    r_inner: float,
    r_outer: float,
    cell_type: str = "quad4",
) -> Mesh:
    """Mapped mesh of the quarter annulus ``r_inner <= r <= r_outer``, ``0 <= theta <= 90°``.

    Lattice axis 0 runs radially outwards, axis 1 counter-clockwise in angle (so lattice
    cell ``i + n_radial*j`` is the i-th ring cell of the j-th angular sector).

    Parameters
    ----------
    n_radial, n_angular : int
        Cells across the ring and along the arcs.
    r_inner, r_outer : float
        Radii, ``0 < r_inner < r_outer``.
    cell_type : {"quad4", "tri3", "tri6"}
        tri6 mid-edge nodes on the arcs lie on the circles.

    Returns
    -------
    Mesh
        Sides ``inner``, ``outer`` (arcs), ``x_axis`` (theta = 0, on y = 0) and
        ``y_axis`` (theta = 90°, on x = 0).
    """
    name = _resolve_type("quarter_annulus", cell_type, PLANAR_CELL_TYPES)
    _check_divisions(n_radial=n_radial, n_angular=n_angular)
    _check_positive(r_inner=r_inner, r_outer=r_outer)
    if r_inner >= r_outer:
        raise MeshError(f"need r_inner < r_outer, got {r_inner} >= {r_outer}")

    def mapping(fraction: np.ndarray) -> np.ndarray:
        radius = r_inner + fraction[:, 0] * (r_outer - r_inner)
        return radius[:, None] * _unit_arc(fraction[:, 1])

    return _mapped_mesh(
        (n_radial, n_angular),
        name,
        mapping,
        lambda index: _side_masks(index, [("inner", "outer"), ("x_axis", "y_axis")]),
    )


def _geometric_spacing(fraction: np.ndarray, n: int, ratio: float) -> np.ndarray:
    """Map uniform lattice fractions to ``n`` cells growing by ``ratio`` from 0 to 1.

    Fine-lattice (mid-edge) fractions are interpolated linearly between cell ends, so
    mid-edge nodes of straight edges stay at the edge midpoints.
    """
    k = np.arange(n + 1)
    ends = k / n if ratio == 1.0 else (ratio**k - 1) / (ratio**n - 1)
    return np.interp(fraction * n, k, ends)


def plate_with_hole(
    n_radial: int,
    n_angular: int,
    radius: float,
    half_width: float,
    cell_type: str = "quad4",
    grading: float = 1.0,
) -> Mesh:
    """Mapped mesh of a quarter square plate ``[0, L]^2`` with a hole ``r < a`` at the origin.

    Each lattice line of axis 0 is a straight radial segment from the hole to the square
    boundary: from the hole point at angle ``theta = 90° * eta`` to the point at arc
    length ``2 L eta`` along the outer path ``(L, 0) -> (L, L) -> (0, L)``. The corner
    ``(L, L)`` is the end of the 45° line, so the domain splits into two mapped blocks,
    one per outer edge. Axis 1 runs counter-clockwise.

    Parameters
    ----------
    n_radial : int
        Cells from the hole to the outer boundary.
    n_angular : int
        Cells along the hole; must be even (half of them per block).
    radius : float
        Hole radius ``a``.
    half_width : float
        ``L``, with ``0 < a < L``.
    cell_type : {"quad4", "tri3", "tri6"}
        tri6 mid-edge nodes on the hole lie on the circle.
    grading : float
        Ratio between consecutive radial cell sizes, from the hole outwards; values
        above 1 refine towards the hole, 1 is uniform.

    Returns
    -------
    Mesh
        Sides ``hole``, ``right`` (x = L), ``top`` (y = L), ``x_axis`` (y = 0) and
        ``y_axis`` (x = 0).
    """
    name = _resolve_type("plate_with_hole", cell_type, PLANAR_CELL_TYPES)
    _check_divisions(n_radial=n_radial, n_angular=n_angular)
    _check_positive(radius=radius, half_width=half_width, grading=grading)
    if radius >= half_width:
        raise MeshError(f"need radius < half_width, got {radius} >= {half_width}")
    if n_angular % 2:
        raise MeshError(f"n_angular must be even (half the cells per outer edge), got {n_angular}")

    def mapping(fraction: np.ndarray) -> np.ndarray:
        along = 2 * fraction[:, 1]  # arc length on the outer path, in units of L
        outer = half_width * np.column_stack([np.minimum(1.0, 2.0 - along), np.minimum(1.0, along)])
        inner = radius * _unit_arc(fraction[:, 1])
        spacing = _geometric_spacing(fraction[:, 0], n_radial, grading)
        return inner + spacing[:, None] * (outer - inner)

    def sides(index: np.ndarray) -> dict[str, np.ndarray]:
        masks = _side_masks(index, [("hole", "outer"), ("x_axis", "y_axis")])
        outer = masks.pop("outer")
        twice_angle = 2 * index[:, 1]
        last = index[:, 1].max()
        masks["right"] = outer & (twice_angle <= last)
        masks["top"] = outer & (twice_angle >= last)
        return masks

    return _mapped_mesh((n_radial, n_angular), name, mapping, sides)
