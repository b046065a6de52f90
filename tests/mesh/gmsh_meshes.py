"""Small Gmsh meshes made in the test's ``tmp_path`` with the ``gmsh`` Python module."""

from pathlib import Path

import gmsh

from fesens.mesh.gmsh_session import initialize_gmsh


def _start(incomplete: bool) -> None:
    initialize_gmsh(["-noenv"])
    gmsh.option.setNumber("General.Terminal", 0)
    gmsh.option.setNumber("Mesh.SecondOrderIncomplete", int(incomplete))


def _finish(path: Path, order: int) -> Path:
    try:
        gmsh.model.mesh.setOrder(order)
        gmsh.write(str(path))
    finally:
        gmsh.finalize()
    return path


def quadrilaterals(path: Path, order: int = 1, incomplete: bool = False,
                   clockwise: bool = False) -> Path:
    """A 2 x 1 rectangle meshed with 3 x 2 quadrilaterals, groups ``plate`` and ``left``.

    ``clockwise``: the surface is bounded by a clockwise curve loop (normal -z), so Gmsh
    numbers every cell clockwise. ``incomplete``: quad8 instead of quad9 at order 2.
    """
    _start(incomplete)
    geo = gmsh.model.geo
    corners = [geo.addPoint(x, y, 0) for x, y in ((0, 0), (2, 0), (2, 1), (0, 1))]
    lines = [geo.addLine(corners[i], corners[(i + 1) % 4]) for i in range(4)]
    loop = geo.addCurveLoop([-line for line in lines[::-1]] if clockwise else lines)
    surface = geo.addPlaneSurface([loop])
    geo.synchronize()
    for line, n in zip(lines, (4, 3, 4, 3), strict=True):
        gmsh.model.mesh.setTransfiniteCurve(line, n)
    gmsh.model.mesh.setTransfiniteSurface(surface)
    gmsh.model.mesh.setRecombine(2, surface)
    gmsh.model.addPhysicalGroup(2, [surface], name="plate")
    gmsh.model.addPhysicalGroup(1, [lines[3]], name="left")
    gmsh.model.addPhysicalGroup(1, [lines[1]], name="right")
    gmsh.model.mesh.generate(2)
    return _finish(path, order)


def hexahedra(path: Path, order: int = 1, incomplete: bool = False) -> Path:
    """A 2 x 1 x 1 box meshed with 2 x 1 x 1 hexahedra, groups ``block``, ``left`` (x = 0)
    and ``right`` (x = 2)."""
    _start(incomplete)
    gmsh.model.occ.addBox(0, 0, 0, 2, 1, 1)
    gmsh.model.occ.synchronize()
    for _, curve in gmsh.model.getEntities(1):
        low = gmsh.model.getBoundingBox(1, curve)
        n = 3 if abs(low[3] - low[0]) > 1.5 else 2
        gmsh.model.mesh.setTransfiniteCurve(curve, n)
    for _, surface in gmsh.model.getEntities(2):
        gmsh.model.mesh.setTransfiniteSurface(surface)
        gmsh.model.mesh.setRecombine(2, surface)
    gmsh.model.mesh.setTransfiniteVolume(1)
    gmsh.model.addPhysicalGroup(3, [1], name="block")
    faces = {round(gmsh.model.occ.getCenterOfMass(2, s)[0], 6): s
             for _, s in gmsh.model.getEntities(2)}
    gmsh.model.addPhysicalGroup(2, [faces[0.0]], name="left")
    gmsh.model.addPhysicalGroup(2, [faces[2.0]], name="right")
    gmsh.model.mesh.generate(3)
    return _finish(path, order)
