"""Generate the NAFEMS LE1 elliptic membrane: a mapped mesh of the quarter membrane.

NAFEMS LE1 (NAFEMS, "The Standard NAFEMS Benchmarks", TNSB Rev. 3, 1990; "Background to
benchmarks", 1993): the plane-stress membrane between the inner ellipse
``(x/2)² + y² = 1`` and the outer ellipse ``(x/3.25)² + (y/2.75)² = 1`` (m), ``x, y >= 0``,
thickness 0.1 m, ``E = 210 GPa``, ``ν = 0.3``, an outward pressure of 10 MPa on the outer
ellipse, symmetry on ``x = 0`` and ``y = 0``. Target: ``σ_yy = 92.7 MPa`` at
``D = (2, 0)``.

Run ``python meshes/le1.py [n] [order] [quad|tri] [path]`` (needs the gmsh Python API;
default: 16 cells along each edge, tri6, ``le1.msh`` here), or call :func:`generate`
(the tests do, into a temporary folder). The mesh is mapped (transfinite): ``n`` cells
along every edge, graded towards ``D``; mid-edge nodes of quadratic cells lie on the
ellipses. Physical groups:

* ``inner``: the inner ellipse (free); ``outer``: the outer ellipse (loaded);
* ``x_axis``: ``y = 0, 2 <= x <= 3.25`` (fix ``u_y``); ``y_axis``: ``x = 0, 1 <= y <= 2.75``
  (fix ``u_x``);
* ``D``: the point ``(2, 0)``; ``domain``: the membrane.
"""

from __future__ import annotations

import sys
from pathlib import Path

import gmsh

from fesens.mesh.gmsh_session import initialize_gmsh

HERE = Path(__file__).resolve().parent


def generate(path: Path | str, n: int = 16, order: int = 2, quads: bool = False,
             grading: float = 1.0, diagonals: str = "Right") -> Path:
    """Write the LE1 mesh (MSH 4.1) with ``n`` cells per edge and return its path.

    ``order``: 1 (tri3/quad4) or 2 (tri6/quad9 from gmsh; ``quads`` with ``order=2`` gives
    quad9 unless serendipity is asked for by the caller's gmsh options). ``grading``: the
    ratio between consecutive cells along the inner and outer ellipse (1: uniform).
    ``diagonals``: how gmsh splits the mapped quadrilaterals into triangles ("Right",
    "Left", "Alternate"); with "Right" the triangles at ``D`` touch an interior node, so
    that a patch recovery centred inside the membrane reaches ``D``.
    """
    path = Path(path)
    initialize_gmsh()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("le1")
        geo = gmsh.model.geo
        centre = geo.addPoint(0, 0, 0)
        d, b, c, a = (geo.addPoint(x, y, 0) for x, y in ((2, 0), (3.25, 0), (0, 2.75), (0, 1)))
        # counter-clockwise: x axis, outer ellipse, y axis, inner ellipse
        x_axis = geo.addLine(d, b)
        outer = geo.addEllipseArc(b, centre, b, c)
        y_axis = geo.addLine(c, a)
        inner = geo.addEllipseArc(a, centre, d, d)
        loop = geo.addCurveLoop([x_axis, outer, y_axis, inner])
        surface = geo.addPlaneSurface([loop])
        for curve in (x_axis, y_axis):
            geo.mesh.setTransfiniteCurve(curve, n + 1)
        geo.mesh.setTransfiniteCurve(outer, n + 1, "Progression", 1 / grading)
        geo.mesh.setTransfiniteCurve(inner, n + 1, "Progression", grading)
        geo.mesh.setTransfiniteSurface(surface, diagonals, [d, b, c, a])
        if quads:
            geo.mesh.setRecombine(2, surface)
        geo.synchronize()
        for name, curve in (("inner", inner), ("outer", outer), ("x_axis", x_axis),
                            ("y_axis", y_axis)):
            gmsh.model.addPhysicalGroup(1, [curve], name=name)
        gmsh.model.addPhysicalGroup(0, [d], name="D")
        gmsh.model.addPhysicalGroup(2, [surface], name="domain")
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.option.setNumber("Mesh.Binary", 0)
        gmsh.model.mesh.generate(2)
        gmsh.model.mesh.setOrder(order)
        gmsh.write(str(path))
    finally:
        gmsh.finalize()
    return path


if __name__ == "__main__":
    args = sys.argv[1:]
    generate(args[3] if len(args) > 3 else HERE / "le1.msh",
             n=int(args[0]) if args else 16, order=int(args[1]) if len(args) > 1 else 2,
             quads=len(args) > 2 and args[2] == "quad")
