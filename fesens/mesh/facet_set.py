"""A named set of facets of a mesh (:class:`FacetSet`): its own module so that the mesh
(:mod:`fesens.mesh.mesh`) and the checks it runs (:mod:`fesens.mesh.validation`) both import
it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FacetSet:
    """A set of boundary (or interior) facets.

    Attributes
    ----------
    facet_type : str
        fesens cell-type name of the facets (``"line2"``, ``"tri3"``, ...).
    facets : numpy.ndarray
        Node ids, shape ``(n_facets, n_facet_nodes)``.
    cells : numpy.ndarray or None
        Id of the volume cell each facet belongs to, shape ``(n_facets,)``, when known
        (used to orient normals outwards).
    """

    facet_type: str
    facets: np.ndarray
    cells: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.facets)

    @property
    def nodes(self) -> np.ndarray:
        """Sorted unique node ids touched by the facets."""
        return np.unique(self.facets)
