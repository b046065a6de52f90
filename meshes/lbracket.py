"""Generate ``fesens/data/meshes/lbracket.msh`` (MSH 4.1): the classic L-bracket, about 2000
linear triangles; package data, as ``fesens demo`` and the ``lbracket`` presets read it.

Run ``python meshes/lbracket.py`` (needs the gmsh Python API). Geometry, in mm: the
square ``[0, 100]^2`` without ``x > 40 and y > 40``. Cells are refined towards the
re-entrant corner ``(40, 40)``, where stresses concentrate. Physical groups:

* ``top``: the top edge ``y = 100, 0 <= x <= 40`` (clamped in the usual benchmark);
* ``load``: the upper end of the arm's tip, ``x = 100, 28 <= y <= 40`` (loaded);
* ``corner``: the re-entrant corner point ``(40, 40)``;
* ``domain``: the whole bracket.
"""

from __future__ import annotations

from pathlib import Path

import gmsh

from fesens.mesh.gmsh_session import initialize_gmsh

OUTPUT = Path(__file__).resolve().parents[1] / "fesens" / "data" / "meshes" / "lbracket.msh"

# Boundary vertices, counter-clockwise so that the triangles are too.
CORNERS = [(0, 0), (100, 0), (100, 28), (100, 40), (40, 40), (40, 100), (0, 100)]
SIZE_AT_CORNER = 1.0
SIZE_FAR = 3.8


def main() -> None:
    initialize_gmsh()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("lbracket")
        geo = gmsh.model.geo
        points = [geo.addPoint(x, y, 0) for x, y in CORNERS]
        lines = [geo.addLine(a, b) for a, b in zip(points, points[1:] + points[:1], strict=True)]
        surface = geo.addPlaneSurface([geo.addCurveLoop(lines)])
        geo.synchronize()

        by_start = dict(zip(CORNERS, lines, strict=True))
        gmsh.model.addPhysicalGroup(1, [by_start[(40, 100)]], name="top")
        gmsh.model.addPhysicalGroup(1, [by_start[(100, 28)]], name="load")
        gmsh.model.addPhysicalGroup(0, [points[CORNERS.index((40, 40))]], name="corner")
        gmsh.model.addPhysicalGroup(2, [surface], name="domain")

        field = gmsh.model.mesh.field
        distance = field.add("Distance")
        field.setNumbers(distance, "PointsList", [points[CORNERS.index((40, 40))]])
        threshold = field.add("Threshold")
        field.setNumber(threshold, "InField", distance)
        field.setNumber(threshold, "SizeMin", SIZE_AT_CORNER)
        field.setNumber(threshold, "SizeMax", SIZE_FAR)
        field.setNumber(threshold, "DistMin", 2.0)
        field.setNumber(threshold, "DistMax", 40.0)
        field.setAsBackgroundMesh(threshold)
        for option in ("MeshSizeExtendFromBoundary", "MeshSizeFromPoints", "MeshSizeFromCurvature"):
            gmsh.option.setNumber(f"Mesh.{option}", 0)

        gmsh.model.mesh.generate(2)
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.option.setNumber("Mesh.Binary", 0)
        gmsh.write(str(OUTPUT))
    finally:
        gmsh.finalize()


if __name__ == "__main__":
    main()
