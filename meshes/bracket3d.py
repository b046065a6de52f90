"""Generate ``bracket3d.msh`` (tet4) and ``bracket3d_tet10.msh`` (tet10, coarser), MSH 4.1:
a wall-mounted shelf bracket.

Run ``python meshes/bracket3d.py`` (needs the gmsh Python API). Geometry, in mm (x away
from the wall, z up):

* wall plate ``[0, 8] x [0, 40] x [0, 60]`` with two bolt holes of radius 4 along x,
  centred at ``(y, z) = (9, 20)`` and ``(31, 20)``;
* shelf ``[8, 68] x [0, 40] x [52, 60]``;
* gusset: the triangle ``(x, z) = (8, 12), (8, 52), (56, 52)`` extruded over
  ``16 <= y <= 24``.

Volume ``8·40·60 + 60·40·8 + 48·40/2·8 − 2·π·4²·8 = 46080 − 256π`` mm³. Cells are sized
by the curvature of the holes (about 12 per circle) up to a maximum size; the tet10
file places its mid-edge nodes of the holes on the cylinders. Physical groups:

* ``fixed``: the cylindrical faces of both bolt holes (clamped);
* ``load``: the end face of the shelf, ``x = 68`` (loaded);
* ``domain``: the whole bracket.
"""

from __future__ import annotations

from pathlib import Path

import gmsh

from fesens.mesh.gmsh_session import initialize_gmsh

HERE = Path(__file__).resolve().parent
# element order -> (file, maximum cell size)
OUTPUTS = {1: (HERE / "bracket3d.msh", 4.0), 2: (HERE / "bracket3d_tet10.msh", 8.0)}

PLATE = (0.0, 0.0, 0.0, 8.0, 40.0, 60.0)  # x, y, z, dx, dy, dz
SHELF = (8.0, 0.0, 52.0, 60.0, 40.0, 8.0)
GUSSET = [(8.0, 12.0), (8.0, 52.0), (56.0, 52.0)]  # (x, z)
GUSSET_Y = (16.0, 8.0)  # y, thickness
HOLES = [(9.0, 20.0), (31.0, 20.0)]  # (y, z) of the axes, along x through the plate
HOLE_RADIUS = 4.0
CELLS_PER_CIRCLE = 12
EPS = 1e-6


def _surfaces_in_box(low, high) -> list[int]:
    """Tags of the surfaces inside the box ``low``-``high`` (widened by EPS)."""
    box = gmsh.model.getEntitiesInBoundingBox(
        *(c - EPS for c in low), *(c + EPS for c in high), 2
    )
    return [tag for _, tag in box]


def _gusset(occ) -> tuple[int, int]:
    y, thickness = GUSSET_Y
    points = [occ.addPoint(x, y, z) for x, z in GUSSET]
    lines = [occ.addLine(a, b) for a, b in zip(points, points[1:] + points[:1], strict=True)]
    face = occ.addPlaneSurface([occ.addCurveLoop(lines)])
    extruded = occ.extrude([(2, face)], 0, thickness, 0)
    return next(dim_tag for dim_tag in extruded if dim_tag[0] == 3)


def _build() -> int:
    occ = gmsh.model.occ
    x, _, _, dx, _, _ = PLATE
    body, _ = occ.fuse([(3, occ.addBox(*PLATE))], [(3, occ.addBox(*SHELF)), _gusset(occ)])
    holes = [(3, occ.addCylinder(x, y, z, dx, 0, 0, HOLE_RADIUS)) for y, z in HOLES]
    (bracket,), _ = occ.cut(body, holes)
    occ.synchronize()
    return bracket[1]


def main() -> None:
    initialize_gmsh()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("bracket3d")
        volume = _build()
        x, _, _, dx, _, _ = PLATE
        fixed = [
            tag
            for y, z in HOLES
            for tag in _surfaces_in_box(
                (x, y - HOLE_RADIUS, z - HOLE_RADIUS), (x + dx, y + HOLE_RADIUS, z + HOLE_RADIUS)
            )
        ]
        tip = SHELF[0] + SHELF[3]
        gmsh.model.addPhysicalGroup(2, fixed, name="fixed")
        gmsh.model.addPhysicalGroup(2, _surfaces_in_box((tip, 0, 0), (tip, 40, 60)), name="load")
        gmsh.model.addPhysicalGroup(3, [volume], name="domain")

        gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", CELLS_PER_CIRCLE)
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.option.setNumber("Mesh.Binary", 0)
        for order, (path, size) in OUTPUTS.items():
            gmsh.model.mesh.clear()
            gmsh.option.setNumber("Mesh.MeshSizeMax", size)
            gmsh.model.mesh.generate(3)
            gmsh.model.mesh.setOrder(order)
            gmsh.write(str(path))
    finally:
        gmsh.finalize()


if __name__ == "__main__":
    main()
