"""Generate ``cook.msh`` (MSH 4.1): Cook's membrane, a structured grid of 32 x 32 quad4.

Run ``python meshes/cook.py`` (needs the gmsh Python API). Geometry (Cook, 1974): the
tapered panel with vertices ``(0, 0), (48, 44), (48, 60), (0, 44)``, area 1440, clamped on
the left and loaded by a shear on the right; the classic test of shear locking and
near-incompressibility. The grid is ``N x N`` quadrilaterals, with ``N`` segments along
each edge (equally spaced). Physical groups:

* ``left``: the clamped edge ``x = 0, 0 <= y <= 44``;
* ``right``: the loaded edge ``x = 48, 44 <= y <= 60``;
* ``domain``: the whole panel.

With ``E = 1``, ``ν = 1/3``, plane stress and a total vertical load 1 on ``right``, the
vertical displacement of the midpoint ``(48, 52)`` of ``right`` converges to 23.96 (the
usual reference value; 23.82 on this mesh, 23.96 with tri6 on a 64 x 64 grid).
"""

from __future__ import annotations

from pathlib import Path

import gmsh

from fesens.mesh.gmsh_session import initialize_gmsh

OUTPUT = Path(__file__).resolve().parent / "cook.msh"

# Vertices counter-clockwise, so that the quadrilaterals are too.
CORNERS = [(0, 0), (48, 44), (48, 60), (0, 44)]
N = 32  # cells per edge


def main() -> None:
    initialize_gmsh()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("cook")
        geo = gmsh.model.geo
        points = [geo.addPoint(x, y, 0) for x, y in CORNERS]
        lines = [geo.addLine(a, b) for a, b in zip(points, points[1:] + points[:1], strict=True)]
        surface = geo.addPlaneSurface([geo.addCurveLoop(lines)])
        for line in lines:
            geo.mesh.setTransfiniteCurve(line, N + 1)
        geo.mesh.setTransfiniteSurface(surface, cornerTags=points)
        geo.mesh.setRecombine(2, surface)
        geo.synchronize()

        by_start = dict(zip(CORNERS, lines, strict=True))
        gmsh.model.addPhysicalGroup(1, [by_start[(0, 44)]], name="left")
        gmsh.model.addPhysicalGroup(1, [by_start[(48, 44)]], name="right")
        gmsh.model.addPhysicalGroup(2, [surface], name="domain")

        gmsh.model.mesh.generate(2)
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.option.setNumber("Mesh.Binary", 0)
        gmsh.write(str(OUTPUT))
    finally:
        gmsh.finalize()


if __name__ == "__main__":
    main()
