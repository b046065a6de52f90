"""The compiled kernel of :class:`~fesens.fem.transient.pattern_sums.PatternOuters`: the
running sums ``sums[k] −= Σ_s λ_s x_(s,k)ᵀ`` on a sparsity pattern in one pass over its
entries (numba; importing this module fails where numba is not installed, and the numpy
passes of ``PatternOuters`` run instead).
"""

from __future__ import annotations

import numba
import numpy as np

#: Buffered calls from which an entry's subtractions run as one chain in a register
#: (fewer passes over the sums); with fewer, row by row (measured at 200x100 quad4, one
#: sum: one call 0.18 ms the row way, 0.30 ms chained; eight calls 0.08 ms a call chained).
CHAINED = 4


@numba.njit(cache=True, nogil=True, boundscheck=False)
def subtract_outers(indptr: np.ndarray, cols: np.ndarray, lams: np.ndarray, xs: np.ndarray,
                    held: int, sums: np.ndarray) -> None:  # pragma: no cover - compiled
    """``sums[k, e] −= λ_s[i] x_(s,k)[j]`` at every stored entry ``e = (i, j)``, for the
    calls ``s = 0 .. held − 1`` one at a time and in order (the bits of ``held`` numpy
    updates ``sums[k] −= x[cols] * λ[rows]``).

    Parameters
    ----------
    indptr : ndarray, (n + 1,)
    cols : ndarray, (nnz,)
    lams : ndarray, (steps, n)
        ``lams[s]`` is ``λ_s``.
    xs : ndarray, (count, steps, n)
        ``xs[k, s]`` is ``x_(s,k)``.
    held : int
        Calls held (``<= steps``).
    sums : ndarray, (count, nnz)
        Updated in place.
    """
    count = sums.shape[0]
    for i in range(indptr.size - 1):
        e0, e1 = indptr[i], indptr[i + 1]
        if held < CHAINED:
            # the calls outermost within a row: the row's entries are independent updates
            for s in range(held):
                lam = lams[s, i]
                for k in range(count):
                    x, total = xs[k, s], sums[k]
                    for e in range(e0, e1):
                        # a product, then a subtraction: no fused multiply-add (numba
                        # contracts only under fastmath), so numpy's bits
                        total[e] -= x[cols[e]] * lam
            continue
        # the calls innermost: each entry's sums read and written once per pass
        for e in range(e0, e1):
            j = cols[e]
            for k in range(count):
                total = sums[k, e]
                for s in range(held):
                    total -= xs[k, s, j] * lams[s, i]
                sums[k, e] = total
