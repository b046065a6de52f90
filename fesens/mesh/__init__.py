"""Meshes: the :class:`Mesh` container, structured generators and file I/O."""

from fesens.mesh.cell_types import CELL_TYPES, CellType, cell_type
from fesens.mesh.mesh import FacetSet, Mesh

__all__ = ["CELL_TYPES", "CellType", "FacetSet", "Mesh", "cell_type"]
