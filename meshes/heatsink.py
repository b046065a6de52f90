"""Generate ``heatsink.msh`` (MSH 4.1): a 2D heat-sink design domain, about 3000 tri3.

Run ``python meshes/heatsink.py`` (needs the gmsh Python API). Geometry, in mm: the
uniformly heated square ``[0, 100]^2`` cooled through a short segment in the middle of its
left edge (the "volume-to-point" problem of conductive topology optimization). It holds
two passive regions, meshed conformingly: a solid base strip against the sink and a
circular void (say, a hole for a fastener). Cells are refined towards the sink (size 0.8
there, 3 far away). Physical groups:

* ``sink``: the segment ``x = 0, 45 <= y <= 55`` (fixed temperature);
* ``boundary``: the rest of the outer boundary (insulated);
* ``domain``: all cells;
* ``base``: the solid strip ``[0, 5] x [40, 60]`` (passive, always material);
* ``void``: the disk of radius 10 centred at ``(70, 50)`` (passive, never material);
* ``design``: the other cells (the design variables).
"""

from __future__ import annotations

from pathlib import Path

import gmsh

from fesens.mesh.gmsh_session import initialize_gmsh

OUTPUT = Path(__file__).resolve().parent / "heatsink.msh"

SIDE = 100.0
SINK = (45.0, 55.0)  # y range of the sink on x = 0
BASE = (0.0, 40.0, 5.0, 20.0)  # x, y, width, height
VOID = (70.0, 50.0, 10.0)  # centre x, y, radius
SIZE_AT_SINK = 0.8
SIZE_FAR = 3.0
EPS = 1e-6


def _curves_in_box(x0: float, y0: float, x1: float, y1: float) -> list[int]:
    box = gmsh.model.getEntitiesInBoundingBox(x0 - EPS, y0 - EPS, -EPS, x1 + EPS, y1 + EPS, EPS, 1)
    return [tag for _, tag in box]


def main() -> None:
    initialize_gmsh()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("heatsink")
        occ = gmsh.model.occ
        square = occ.addRectangle(0, 0, 0, SIDE, SIDE)
        base = occ.addRectangle(*BASE[:2], 0, *BASE[2:])
        void = occ.addDisk(VOID[0], VOID[1], 0, VOID[2], VOID[2])
        sink = occ.addLine(occ.addPoint(0, SINK[0], 0), occ.addPoint(0, SINK[1], 0))
        # Fragmenting makes the regions conforming and splits the left edge at the sink.
        _, pieces = occ.fragment([(2, square)], [(2, base), (2, void), (1, sink)])
        occ.synchronize()
        design = [tag for _, tag in pieces[0] if (2, tag) not in pieces[1] + pieces[2]]
        base, void = pieces[1][0][1], pieces[2][0][1]

        outer = set(_curves_in_box(0, 0, SIDE, 0) + _curves_in_box(SIDE, 0, SIDE, SIDE)
                    + _curves_in_box(0, SIDE, SIDE, SIDE) + _curves_in_box(0, 0, 0, SIDE))
        sink_curves = _curves_in_box(0, SINK[0], 0, SINK[1])
        gmsh.model.addPhysicalGroup(1, sink_curves, name="sink")
        gmsh.model.addPhysicalGroup(1, sorted(outer - set(sink_curves)), name="boundary")
        gmsh.model.addPhysicalGroup(2, sorted(design + [base, void]), name="domain")
        gmsh.model.addPhysicalGroup(2, [base], name="base")
        gmsh.model.addPhysicalGroup(2, [void], name="void")
        gmsh.model.addPhysicalGroup(2, design, name="design")

        field = gmsh.model.mesh.field
        distance = field.add("Distance")
        field.setNumbers(distance, "CurvesList", sink_curves)
        field.setNumber(distance, "Sampling", 50)
        threshold = field.add("Threshold")
        field.setNumber(threshold, "InField", distance)
        field.setNumber(threshold, "SizeMin", SIZE_AT_SINK)
        field.setNumber(threshold, "SizeMax", SIZE_FAR)
        field.setNumber(threshold, "DistMin", 1.0)
        field.setNumber(threshold, "DistMax", 25.0)
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
