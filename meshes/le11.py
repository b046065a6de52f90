"""Generate the NAFEMS LE11 solid cylinder/taper/sphere: a quarter of the solid of revolution.

NAFEMS LE11 "Solid cylinder/Taper/Sphere — Temperature" (NAFEMS, "The Standard NAFEMS
Benchmarks", TNSB Rev. 3, 1990; "Background to benchmarks", 1993, p. 85): the body of
revolution about the z axis whose meridian section (radius ``r``, height ``z``, in m) is
bounded by

* ``z = 0`` from A ``(1, 0)`` to B ``(1.4, 0)`` (axial displacement fixed);
* the sphere ``r² + z² = 1.4²`` from B to D ``(1.2124, 0.7)`` (30°), the straight taper
  from D to G ``(1, 1.39)``, the cylinder ``r = 1`` from G to I ``(1, 1.79)``;
* ``z = 1.79`` from I to H ``(0.7071, 1.79)`` (axial displacement fixed);
* the cylinder ``r = 0.7071`` from H down to E ``(0.7071, 0.7071)`` and the sphere
  ``r² + z² = 1`` from E (45°) back to A.

``E = 210 GPa``, ``ν = 0.3``, ``α = 2.3e-4 /°C``, temperature ``T = r + z`` (°C), reference
0 °C. Target: ``σ_zz = −105 MPa`` at A.

fesens has no axisymmetric elements, so the script revolves the section through 90° about
the z axis (symmetry planes ``x = 0`` and ``y = 0``): hexahedra from a recombined quad mesh
of the section, ``layers`` cells around. Run ``python meshes/le11.py [size] [layers] [order]
[path]`` (default: size 0.05 m, 8 layers, order 2 = hex20, ``le11.msh`` here), or call
:func:`generate` (the tests do, into a temporary folder). Mid-edge nodes lie on the curved
surfaces. Physical groups: ``bottom`` (``z = 0``), ``top`` (``z = 1.79``), ``xz`` (``y = 0``),
``yz`` (``x = 0``) facets; ``domain`` cells.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import gmsh

from fesens.mesh.gmsh_session import initialize_gmsh

HERE = Path(__file__).resolve().parent

#: Meridian key points ``(r, z)`` of the section, counter-clockwise from A.
A, B, D, G, I, H, E = ((1.0, 0.0), (1.4, 0.0), (1.4 * math.cos(math.pi / 6), 0.7),
                       (1.0, 1.39), (1.0, 1.79), (math.sqrt(0.5), 1.79),
                       (math.sqrt(0.5), math.sqrt(0.5)))


def generate(path: Path | str, size: float = 0.05, layers: int = 8, order: int = 2) -> Path:
    """Write the quarter LE11 mesh (MSH 4.1) and return its path.

    ``size``: target cell size of the section (m); ``layers``: cells through the 90° of
    revolution; ``order``: 1 (hex8) or 2 (hex20).
    """
    path = Path(path)
    initialize_gmsh()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.model.add("le11")
        geo = gmsh.model.geo
        centre = geo.addPoint(0, 0, 0, size)
        a, b, d, g, i, h, e = (geo.addPoint(r, 0, z, size) for r, z in (A, B, D, G, I, H, E))
        curves = {
            "bottom": geo.addLine(a, b),
            "outer_sphere": geo.addCircleArc(b, centre, d),
            "taper": geo.addLine(d, g),
            "outer_cylinder": geo.addLine(g, i),
            "top": geo.addLine(i, h),
            "inner_cylinder": geo.addLine(h, e),
            "inner_sphere": geo.addCircleArc(e, centre, a),
        }
        loop = geo.addCurveLoop(list(curves.values()))
        section = geo.addPlaneSurface([loop])
        geo.mesh.setRecombine(2, section)
        revolved = geo.revolve([(2, section)], 0, 0, 0, 0, 0, 1, math.pi / 2,
                               numElements=[layers], recombine=True)
        geo.synchronize()
        # revolve returns: the end surface, the volume, then one surface per section curve
        end, volume = revolved[0][1], revolved[1][1]
        sides = dict(zip(curves, (tag for dim, tag in revolved[2:] if dim == 2), strict=True))
        gmsh.model.addPhysicalGroup(2, [sides["bottom"]], name="bottom")
        gmsh.model.addPhysicalGroup(2, [sides["top"]], name="top")
        gmsh.model.addPhysicalGroup(2, [section], name="xz")
        gmsh.model.addPhysicalGroup(2, [end], name="yz")
        gmsh.model.addPhysicalGroup(3, [volume], name="domain")
        gmsh.option.setNumber("Mesh.MshFileVersion", 4.1)
        gmsh.option.setNumber("Mesh.Binary", 0)
        gmsh.option.setNumber("Mesh.RecombinationAlgorithm", 1)
        gmsh.option.setNumber("Mesh.SecondOrderIncomplete", 1)
        gmsh.model.mesh.generate(3)
        gmsh.model.mesh.setOrder(order)
        gmsh.write(str(path))
    finally:
        gmsh.finalize()
    return path


if __name__ == "__main__":
    args = sys.argv[1:]
    generate(args[3] if len(args) > 3 else HERE / "le11.msh",
             size=float(args[0]) if args else 0.05, layers=int(args[1]) if len(args) > 1 else 8,
             order=int(args[2]) if len(args) > 2 else 2)
