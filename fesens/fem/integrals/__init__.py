"""Integrals over the cells, vectorised and traced in the node coordinates: the isoparametric
geometry, the cell matrices of generic bilinear forms and their hand-derived shape derivative,
mass matrices, boundary (facet) matrices and consistent load vectors."""
