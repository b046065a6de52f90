"""Meshes: the :class:`Mesh` container, structured generators and file I/O."""

from fesens.mesh.cell_types import CELL_TYPES, CellType, cell_type
from fesens.mesh.generators import box, plate_with_hole, quarter_annulus, rectangle
from fesens.mesh.ground_structure import ground_structure
from fesens.mesh.io import ReorientedCellsWarning, read_cell_field, read_mesh
from fesens.mesh.mesh import FacetSet, Mesh
from fesens.mesh.packaged import packaged_mesh_names, packaged_mesh_path
from fesens.mesh.writing import XdmfSeriesWriter, write_mesh

__all__ = [
    "CELL_TYPES",
    "CellType",
    "FacetSet",
    "Mesh",
    "ReorientedCellsWarning",
    "XdmfSeriesWriter",
    "box",
    "cell_type",
    "ground_structure",
    "packaged_mesh_names",
    "packaged_mesh_path",
    "plate_with_hole",
    "quarter_annulus",
    "read_cell_field",
    "read_mesh",
    "rectangle",
    "write_mesh",
]
