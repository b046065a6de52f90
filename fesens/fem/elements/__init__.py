"""Reference finite elements, one module per cell type, and their registry.

>>> element = reference_element("tri6")
>>> xi, w = element.quadrature()          # default: exact for the stiffness matrix
>>> element.shape(xi).shape, element.shape_gradients(xi).shape
((3, 6), (3, 6, 2))
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from fesens.errors import MeshError
from fesens.fem.elements.base import ReferenceElement
from fesens.fem.elements.hex8 import HEX8
from fesens.fem.elements.hex20 import HEX20
from fesens.fem.elements.hex27 import HEX27
from fesens.fem.elements.line2 import LINE2
from fesens.fem.elements.line3 import LINE3
from fesens.fem.elements.point1 import POINT1
from fesens.fem.elements.quad4 import QUAD4
from fesens.fem.elements.quad8 import QUAD8
from fesens.fem.elements.quad9 import QUAD9
from fesens.fem.elements.tet4 import TET4
from fesens.fem.elements.tet10 import TET10
from fesens.fem.elements.tri3 import TRI3
from fesens.fem.elements.tri6 import TRI6
from fesens.mesh.cell_types import MESHIO_TO_FESENS

#: Every reference element by fesens cell-type name (read-only).
ELEMENTS: Mapping[str, ReferenceElement] = MappingProxyType(
    {
        e.name: e
        for e in (POINT1, LINE2, LINE3, TRI3, TRI6, QUAD4, QUAD8, QUAD9, TET4, TET10, HEX8,
                  HEX20, HEX27)
    }
)


def reference_element(name: str) -> ReferenceElement:
    """The reference element of cell type ``name`` (fesens or meshio spelling).

    Raises
    ------
    MeshError
        If no element exists for ``name``; the message lists the supported types.
    """
    element = ELEMENTS.get(MESHIO_TO_FESENS.get(name, name))
    if element is None:
        raise MeshError(
            f"no reference element for cell type {name!r}; supported: {', '.join(ELEMENTS)}"
        )
    return element


__all__ = ["ELEMENTS", "ReferenceElement", "reference_element"]
