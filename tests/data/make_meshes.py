"""Regenerate the small Gmsh test meshes in this folder (needs the gmsh Python API).

Run ``python tests/data/make_meshes.py``. Each geometry is written in MSH 2.2 and 4.1
(``<name>_v22.msh``, ``<name>_v41.msh``) with the same physical groups:

* ``square_tri3``: unit square, linear triangles.
* ``box_tet4`` / ``box_tet10``: unit cube, linear / quadratic tetrahedra.

Physical groups: ``left`` (x = 0) and ``right`` (x = 1) sides, ``domain`` (the whole
surface or volume), ``origin`` (the point at the origin).
"""

from __future__ import annotations

from pathlib import Path

import gmsh

from fesens.mesh.gmsh_session import initialize_gmsh

HERE = Path(__file__).resolve().parent
EPS = 1e-6


def _entities_at_x(dim: int, x: float) -> list[int]:
    """Tags of the dim-entities lying in the plane x = const (unit square/cube)."""
    found = gmsh.model.getEntitiesInBoundingBox(x - EPS, -EPS, -EPS, x + EPS, 1 + EPS, 1 + EPS, dim)
    return [tag for _, tag in found]


def _build(name: str, dim: int, order: int, size: float) -> None:
    gmsh.model.add(name)
    occ = gmsh.model.occ
    body = occ.addRectangle(0, 0, 0, 1, 1) if dim == 2 else occ.addBox(0, 0, 0, 1, 1, 1)
    occ.synchronize()
    gmsh.model.addPhysicalGroup(dim - 1, _entities_at_x(dim - 1, 0.0), name="left")
    gmsh.model.addPhysicalGroup(dim - 1, _entities_at_x(dim - 1, 1.0), name="right")
    gmsh.model.addPhysicalGroup(dim, [body], name="domain")
    origin = gmsh.model.getEntitiesInBoundingBox(-EPS, -EPS, -EPS, EPS, EPS, EPS, 0)
    gmsh.model.addPhysicalGroup(0, [origin[0][1]], name="origin")
    gmsh.option.setNumber("Mesh.MeshSizeMin", size)
    gmsh.option.setNumber("Mesh.MeshSizeMax", size)
    gmsh.model.mesh.generate(dim)
    gmsh.model.mesh.setOrder(order)
    for version, suffix in ((2.2, "v22"), (4.1, "v41")):
        gmsh.option.setNumber("Mesh.MshFileVersion", version)
        gmsh.write(str(HERE / f"{name}_{suffix}.msh"))
    gmsh.model.remove()


def main() -> None:
    initialize_gmsh()
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.option.setNumber("Mesh.Binary", 0)
        _build("square_tri3", dim=2, order=1, size=0.25)
        _build("box_tet4", dim=3, order=1, size=0.5)
        _build("box_tet10", dim=3, order=2, size=0.5)
    finally:
        gmsh.finalize()


if __name__ == "__main__":
    main()
