"""Generate ``plate_hole.msh`` (tri6) and ``plate_hole_tri3.msh`` (MSH 4.1): a quarter plate
with a circular hole.

Run ``python meshes/plate_hole.py`` (needs the gmsh Python API). Geometry, in mm: the
square plate ``[-L, L]^2`` with a hole of radius ``a`` at the origin, ``L = 100``,
``a = 10`` (``L/a = 10``, so a uniform tension on ``x = ±L`` gives Kirsch's stress
concentration 3 at the top of the hole to within about 1%). By symmetry only the quarter
``x, y >= 0`` is meshed. Cells are refined towards the hole (size 0.5 there, 8 far away);
both files share the corner nodes, the tri6 file adds mid-edge nodes, those of the hole
on the circle. Physical groups:

* ``hole``: the quarter circle ``r = a`` (traction-free, or pressurised);
* ``x_axis``: the symmetry edge ``y = 0, a <= x <= L`` (fix ``u_y``);
* ``y_axis``: the symmetry edge ``x = 0, a <= y <= L`` (fix ``u_x``);
* ``right``: the loaded edge ``x = L``;
* ``top``: the free edge ``y = L``;
* ``domain``: the whole quarter plate.
"""

from __future__ import annotations

from pathlib import Path

import gmsh

from fesens.mesh.gmsh_session import initialize_gmsh

HERE = Path(__file__).resolve().parent
OUTPUTS = {1: HERE / "plate_hole_tri3.msh", 2: HERE / "plate_hole.msh"}  # element order -> file

HALF_WIDTH = 100.0
RADIUS = 10.0
SIZE_AT_HOLE = 0.5
SIZE_FAR = 8.0


def main() -> None:
    initialize_gmsh()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("plate_hole")
        geo = gmsh.model.geo
        L, a = HALF_WIDTH, RADIUS
        centre = geo.addPoint(0, 0, 0)
        # Boundary vertices counter-clockwise, so that the triangles are too.
        corners = [geo.addPoint(x, y, 0) for x, y in ((a, 0), (L, 0), (L, L), (0, L), (0, a))]
        x_axis, right, top, y_axis = (
            geo.addLine(p, q) for p, q in zip(corners[:-1], corners[1:], strict=True)
        )
        hole = geo.addCircleArc(corners[-1], centre, corners[0])
        loop = geo.addCurveLoop([x_axis, right, top, y_axis, hole])
        surface = geo.addPlaneSurface([loop])
        geo.synchronize()

        for name, curve in (("hole", hole), ("x_axis", x_axis), ("y_axis", y_axis),
                            ("right", right), ("top", top)):
            gmsh.model.addPhysicalGroup(1, [curve], name=name)
        gmsh.model.addPhysicalGroup(2, [surface], name="domain")

        field = gmsh.model.mesh.field
        distance = field.add("Distance")
        field.setNumbers(distance, "CurvesList", [hole])
        field.setNumber(distance, "Sampling", 100)
        threshold = field.add("Threshold")
        field.setNumber(threshold, "InField", distance)
        field.setNumber(threshold, "SizeMin", SIZE_AT_HOLE)
        field.setNumber(threshold, "SizeMax", SIZE_FAR)
        field.setNumber(threshold, "DistMin", 0.5)
        field.setNumber(threshold, "DistMax", 60.0)
        field.setAsBackgroundMesh(threshold)
        for option in ("MeshSizeExtendFromBoundary", "MeshSizeFromPoints", "MeshSizeFromCurvature"):
            gmsh.option.setNumber(f"Mesh.{option}", 0)

        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.option.setNumber("Mesh.Binary", 0)
        gmsh.model.mesh.generate(2)
        for order, path in OUTPUTS.items():
            gmsh.model.mesh.setOrder(order)
            gmsh.write(str(path))
    finally:
        gmsh.finalize()


if __name__ == "__main__":
    main()
