"""The structure of a sparse matrix as a backend keeps it: format, shape and index arrays.

A direct backend's symbolic analysis (an ordering, the supernodes) and a multigrid
hierarchy depend on the structure of the matrix alone; :class:`MatrixStructure` is what they
compare a new matrix with before reusing them (the lattice analogue is
:class:`~fesens.solvers.lattice_operator.LatticeStructure`).
"""

from __future__ import annotations

import scipy.sparse as sp

from fesens.readonly import snapshot, unchanged


class MatrixStructure:
    """The structure of a CSR/CSC matrix a backend analysed, to decide whether its symbolic
    analysis can be reused for a new matrix.

    Parameters
    ----------
    A : scipy sparse CSR or CSC matrix or array, shape (n, n)
    """

    def __init__(self, A: sp.csr_matrix | sp.csc_matrix) -> None:
        self.format = A.format
        self.shape = A.shape
        # Frozen index arrays (fesens' cached patterns) are kept by reference: then
        # matching a matrix on the same pattern costs O(1) instead of a comparison.
        self.indptr = snapshot(A.indptr)
        self.indices = snapshot(A.indices)

    def matches(self, A: sp.csr_matrix | sp.csc_matrix) -> bool:
        """Whether ``A`` has this format, shape, index dtype, ``indptr`` and ``indices``."""
        return (
            A.format == self.format
            and A.shape == self.shape
            and A.indices.dtype == self.indices.dtype
            and A.indptr.dtype == self.indptr.dtype
            and unchanged(self.indptr, A.indptr)
            and unchanged(self.indices, A.indices)
        )
