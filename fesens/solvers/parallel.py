"""Slab kernels on all cores, with results independent of the thread count.

The matrix-free kernels (:mod:`fesens.solvers.lattice_operator`), the multigrid's sparse
products (:mod:`fesens.solvers.grid_hierarchy`), the vector updates and dot products of its
CG (:mod:`fesens.solvers.multigrid`) and the grid filter's correlation
(:mod:`fesens.opt.grid_filter`) split their work into pieces fixed by the problem alone,
never by the number of threads, and run the pieces in a :class:`SlabPool`:

* pieces that write disjoint outputs (a slab's cell values, a block of rows of a sparse
  product, a slab of a correlation) run in any order: every output entry is computed by
  the same operations whatever thread computes it;
* pieces that add into shared lattice points (the scatter of a slab of cells touches the
  lattice planes on both of its faces) run in two colours, even slabs then odd slabs
  along the slowest axis: two slabs of one colour are at least one slab apart, so they
  share no lattice point, and every point receives its contributions in the same order
  (its even slab's, then its odd slab's) for 1, 2 or N threads.

The results are therefore bit-identical for every thread count, including the serial
loop of one thread. NumPy's matrix products, copies and ufunc loops, SciPy's sparse
products and :func:`scipy.ndimage.correlate` release the GIL, so a
:class:`concurrent.futures.ThreadPoolExecutor` runs them on all cores. Inside a parallel
region BLAS runs one thread per kernel thread (:func:`fesens.openmp.kernel_threads`
explains why).

Only numpy arrays go to the threads: another array library (CuPy) runs the same pieces
in one loop on its own device.

Why threads over numpy rather than a JIT: the operator product is a batched
``(24, 24) @ (24, cells)`` BLAS product per slab, which a cell-by-cell numba kernel
(``prange`` over the layers of one colour, the same colouring) did not match. Measured on
the 2-core machine, 96x48x48 hex8 apply (loaded, load average ~10): numba 0.68 100-230 ms
on 1 thread and 140-160 ms on 2, numpy slabs 16-120 ms; both bit-identical across thread
counts. numba is therefore not a dependency.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np
import scipy.sparse as sp

from fesens.openmp import kernel_threads

#: Stored entries per row block of a threaded sparse product: smaller matrices run whole
#: (a block costs a thread hand-off, some 20 µs, against ~1 ns per entry).
BLOCK_NNZ = 250_000
#: Entries per piece of a threaded vector operation (CG's dot products and updates): 1 MB
#: of float64 per vector, some 100 µs of work against the hand-off's 20 µs.
VECTOR_PIECE = 131_072


class SlabPool:
    """The threads of one owner's kernels (a lattice, a hierarchy, a filter).

    Parameters
    ----------
    threads : int, optional
        Threads of the kernels; default :func:`fesens.openmp.kernel_threads` at each call
        (``FESENS_THREADS``, else the usable cores less the other tasks running now).
        Settable.
    """

    def __init__(self, threads: int | None = None) -> None:
        self._threads: int | None = None
        self.threads = threads
        self._executor: ThreadPoolExecutor | None = None
        self._workers = 0
        self._blas: Any = None  # threadpoolctl's controller, found on first parallel use

    @property
    def threads(self) -> int:
        return kernel_threads() if self._threads is None else self._threads

    @threads.setter
    def threads(self, count: int | None) -> None:
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)
                                  or count < 1):
            raise ValueError(f"SlabPool: threads = {count!r} must be a positive integer "
                             "(or None for the usable cores)")
        self._threads = count

    def map(self, function: Callable[[Any], Any], items: Sequence) -> list:
        """``[function(item) for item in items]``, the items spread over the threads.

        The calling thread and ``threads - 1`` pool threads take the items from one shared
        counter, so a thread the scheduler sets aside holds up at most the item it has
        taken, and a call hands off to ``threads - 1`` threads rather than once per item;
        every item's result goes to its own place in the list, in the items' order.
        """
        count = min(self.threads, len(items)) if len(items) > 1 else 1
        with self.one_blas_thread():  # the serial loop too: the same products
            if count <= 1:
                return [function(item) for item in items]
            results: list = [None] * len(items)
            taken = itertools.count()  # next() is atomic under the GIL

            def work() -> None:
                for index in iter(taken.__next__, None):
                    if index >= len(items):
                        return
                    results[index] = function(items[index])

            pool = self._pool(count - 1)
            helpers = [pool.submit(work) for _ in range(count - 1)]
            try:
                work()
            finally:  # the helpers write into shared outputs: never return before them
                wait(helpers)
            for helper in helpers:
                helper.result()  # raises a helper's exception
            return results

    def pieces(self, function: Callable[[slice], Any], n: int) -> list:
        """``function(piece)`` for the slices of consecutive pieces of :data:`VECTOR_PIECE`
        entries of a vector of ``n`` (fixed by ``n`` alone)."""
        return self.map(function, [slice(start, min(start + VECTOR_PIECE, n))
                                   for start in range(0, max(n, 1), VECTOR_PIECE)])

    def dot(self, a: np.ndarray, b: np.ndarray) -> float:
        """``a · b`` of two vectors ``(n,)``: the dot products of the :meth:`pieces`,
        summed in order, so the same for every thread count."""
        return float(sum(self.pieces(lambda piece: float(a[piece] @ b[piece]), a.shape[0])))

    def coloured(self, function: Callable[[Any], None], slabs: Sequence) -> None:
        """``function(slab)`` for consecutive slabs that add into shared lattice points:
        the even slabs, then the odd ones (module docstring)."""
        self.map(function, slabs[0::2])
        self.map(function, slabs[1::2])

    def _pool(self, count: int) -> ThreadPoolExecutor:
        if self._executor is None or self._workers != count:
            if self._executor is not None:
                self._executor.shutdown(wait=False)
            self._executor = ThreadPoolExecutor(count, thread_name_prefix="fesens-slab")
            self._workers = count
        return self._executor

    def one_blas_thread(self):
        """A context limiting BLAS to one thread (restored after), or a no-op without
        threadpoolctl: around a whole solve, it makes BLAS's reductions (dot products,
        norms) independent of the thread count too."""
        if self._blas is None:
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:  # pragma: no cover - threadpoolctl is a dependency
                self._blas = False
            else:
                self._blas = ThreadpoolController().select(user_api="blas")
        if self._blas is False or not self._blas.lib_controllers:
            return _Nothing()
        return self._blas.limit(limits=1)

    def __getstate__(self) -> dict:
        # threads and locks do not pickle: a copy starts its own pool
        return {"_threads": self._threads, "_executor": None, "_workers": 0, "_blas": None}


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        return None


class RowBlocks:
    """A sparse matrix whose products run in blocks of rows on a :class:`SlabPool`.

    Every row's dot product is SciPy's whatever the block, so the result is the serial
    product's bit for bit. The blocks (about :data:`BLOCK_NNZ` entries each) depend on the
    matrix alone.

    Parameters
    ----------
    matrix : scipy.sparse matrix, shape (n, m)
    pool : SlabPool
    """

    def __init__(self, matrix, pool: SlabPool) -> None:
        matrix = sp.csr_matrix(matrix)
        self.matrix, self.pool, self.shape = matrix, pool, matrix.shape
        n_blocks = max(1, int(np.ceil(matrix.nnz / BLOCK_NNZ)))
        if n_blocks == 1:
            self._blocks = [(0, self.shape[0], matrix)]
            return
        # row bounds splitting the entries evenly
        bounds = np.searchsorted(matrix.indptr, np.linspace(0, matrix.nnz, n_blocks + 1))
        bounds[0], bounds[-1] = 0, self.shape[0]
        bounds = np.unique(bounds)
        self._blocks = [(int(a), int(b), _row_view(matrix, int(a), int(b)))
                        for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        if len(self._blocks) == 1:
            return self.matrix @ x
        out = np.empty((self.shape[0], *x.shape[1:]), dtype=np.result_type(self.matrix, x))

        def block(item) -> None:
            start, stop, rows = item
            out[start:stop] = rows @ x

        self.pool.map(block, self._blocks)
        return out

    def sparse_product(self, *factors) -> sp.csr_matrix:
        """``matrix @ factors[0] @ factors[1] ...`` for sparse factors, as CSR, each block
        of rows on the pool: a row of a sparse product depends on that row of its left
        factor alone, so the blocks stacked are the one-block product bit for bit (a
        multigrid's coarser Galerkin products ``Pᵀ A P`` ran serially before: 0.6 s of
        a 96x48x48 hex8 build)."""

        def block(item) -> sp.csr_matrix:
            rows = item[2]
            for factor in factors:
                rows = rows @ factor
            return sp.csr_matrix(rows)

        pieces = self.pool.map(block, self._blocks)
        return pieces[0] if len(pieces) == 1 else sp.vstack(pieces, format="csr")


def _row_view(matrix: sp.csr_matrix, start: int, stop: int) -> sp.csr_matrix:
    """Rows ``start:stop`` of a CSR matrix sharing its values and column indices.

    A slice ``matrix[start:stop]`` copies them, and so does the CSR constructor for arrays
    that are views of much larger ones (SciPy's ``_prune_array``): the row blocks of a
    hierarchy's first coarse level doubled its memory (88 MB at 96x48x48 cells). The
    arrays are therefore set on an empty matrix of the block's shape.
    """
    lo, hi = matrix.indptr[start], matrix.indptr[stop]
    block = sp.csr_matrix((stop - start, matrix.shape[1]), dtype=matrix.dtype)
    block.indptr = matrix.indptr[start:stop + 1] - lo
    block.indices, block.data = matrix.indices[lo:hi], matrix.data[lo:hi]
    block.has_sorted_indices = matrix.has_sorted_indices
    return block
