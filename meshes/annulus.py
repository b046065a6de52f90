"""Generate ``annulus.msh`` (MSH 4.1): a quarter of a thick cylinder, 16 x 32 quad4.

Run ``python meshes/annulus.py`` (needs the gmsh Python API). Geometry (dimensionless):
the quarter annulus ``1 <= r <= 2, 0 <= θ <= π/2``, the cross-section of Lamé's thick
cylinder reduced by symmetry. The grid is structured: 16 equal cells through the wall,
32 equal cells around; all nodes of the arcs lie on the circles. Physical groups:

* ``inner``: the arc ``r = 1`` (pressurised);
* ``outer``: the arc ``r = 2`` (free);
* ``x_axis``: the symmetry edge ``y = 0`` (fix ``u_y``);
* ``y_axis``: the symmetry edge ``x = 0`` (fix ``u_x``);
* ``domain``: the whole quarter annulus.
"""

from __future__ import annotations

from pathlib import Path

import gmsh

from fesens.mesh.gmsh_session import initialize_gmsh

OUTPUT = Path(__file__).resolve().parent / "annulus.msh"

R_INNER = 1.0
R_OUTER = 2.0
N_RADIAL = 16
N_ANGULAR = 32


def main() -> None:
    initialize_gmsh()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("annulus")
        geo = gmsh.model.geo
        centre = geo.addPoint(0, 0, 0)
        # Boundary counter-clockwise, so that the quadrilaterals are too.
        corners = [geo.addPoint(x, y, 0) for x, y in
                   ((R_INNER, 0), (R_OUTER, 0), (0, R_OUTER), (0, R_INNER))]
        x_axis = geo.addLine(corners[0], corners[1])
        outer = geo.addCircleArc(corners[1], centre, corners[2])
        y_axis = geo.addLine(corners[2], corners[3])
        inner = geo.addCircleArc(corners[3], centre, corners[0])
        surface = geo.addPlaneSurface([geo.addCurveLoop([x_axis, outer, y_axis, inner])])
        for curve, n_cells in ((x_axis, N_RADIAL), (y_axis, N_RADIAL),
                               (outer, N_ANGULAR), (inner, N_ANGULAR)):
            geo.mesh.setTransfiniteCurve(curve, n_cells + 1)
        geo.mesh.setTransfiniteSurface(surface, cornerTags=corners)
        geo.mesh.setRecombine(2, surface)
        geo.synchronize()

        for name, curve in (("inner", inner), ("outer", outer),
                            ("x_axis", x_axis), ("y_axis", y_axis)):
            gmsh.model.addPhysicalGroup(1, [curve], name=name)
        gmsh.model.addPhysicalGroup(2, [surface], name="domain")

        gmsh.model.mesh.generate(2)
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.option.setNumber("Mesh.Binary", 0)
        gmsh.write(str(OUTPUT))
    finally:
        gmsh.finalize()


if __name__ == "__main__":
    main()
