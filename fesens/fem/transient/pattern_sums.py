"""The matrix cotangents of a reverse sweep over time steps: running sums of outer
products ``−Σ_n λ_n x_nᵀ`` at the stored entries of a sparsity pattern
(:class:`PatternOuters`), one compiled pass over the pattern per block of buffered steps
where numba is installed (:mod:`~fesens.fem.transient.outer_kernel`), numpy passes
otherwise, with the same bits either way.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens.ad.sparse import SparsePattern


def compiled_kernel() -> Callable | None:
    """The compiled kernel of :class:`PatternOuters`, or None where numba is not installed
    (the ``jit`` extra): the one place that chooses between the compiled and the numpy
    passes."""
    try:
        from fesens.fem.transient.outer_kernel import subtract_outers
    except ImportError:
        return None
    return subtract_outers


class PatternOuters:
    """Running sums ``−Σ_n λ_n x_(n,k)ᵀ`` at the stored entries of a sparsity pattern,
    one ``(nnz,)`` array per ``k``: the matrix cotangents of a reverse sweep.

    The products of ``steps`` consecutive calls of :meth:`subtract` are buffered and
    subtracted together: one pass over the sums per ``steps`` adjoint steps instead of one
    per step, so the factor that the steps' substitutions read stays in the cache between
    them (a substitution costs about a quarter more when every step streams the sums
    through the cache as well). The compiled pass (numba) needs no index array of the
    pattern's size, and from 4 buffered calls on reads each entry's sums once per pass;
    the numpy passes go a block of entries at a time. The sums' bits depend neither on
    ``steps`` nor on the pass: every entry subtracts its products one at a time, in the
    order of the calls, as ``sums[k] -= pattern.outer(λ, x)`` would. Read :attr:`sums`
    after :meth:`flush`.

    Parameters
    ----------
    pattern : SparsePattern
    count : int
        Number of sums (0: the calls do nothing).
    steps : int, default 1
        Calls buffered per pass (the buffer holds ``(count + 1) · steps`` vectors
        ``(n,)``; none for 1).
    compiled : bool, optional
        Whether to run the compiled pass; default: where numba is installed
        (:func:`compiled_kernel`).
    """

    #: Products per block of entries of a numpy pass (its ``BLOCK // steps`` entries times
    #: the buffered steps; the temporaries are two arrays of this length).
    BLOCK = 32768

    #: Calls a sweep that stores every state buffers: at most this many, and at most an
    #: eighth of its steps (so the buffer's ``(count + 1)`` vectors per buffered call stay
    #: below half of the ``N`` states it stores already).
    STORED_STEPS = 64

    #: Calls a sweep that stores every state buffers with the compiled pass: its chains
    #: of subtractions per entry run fastest there (measured at 200x100 quad4, one sum:
    #: 0.083, 0.073, 0.076, 0.117 ms a call for 8, 16, 32, 64 calls).
    COMPILED_STEPS = 16

    #: Calls a checkpointed sweep buffers with the compiled pass: at 200x100 quad4, one
    #: sum, 0.12 instead of 0.19 ms a call; the buffer of ``2 · 4`` vectors (1.3 MB) kept
    #: the benchmark's gradient (N = 1000, 32 states) at 14.4 MB of resident growth,
    #: below its states + factor (15.0 MB), once the adjoint held no vectors it does not
    #: read (13.5 MB unbuffered).
    CHECKPOINTED_STEPS = 4

    @classmethod
    def for_sweep(cls, pattern: SparsePattern, count: int, n_steps: int,
                  checkpointed: bool, compiled: bool | None = None) -> PatternOuters:
        """The sums of a reverse sweep over ``n_steps`` steps: buffered where every state is
        stored (at most an eighth of the steps); where checkpointing keeps the memory
        down, :attr:`CHECKPOINTED_STEPS` with the compiled pass and none with the numpy
        passes (whose gathers of a buffer need an index array of the pattern's size)."""
        if compiled is None:
            compiled = compiled_kernel() is not None
        if checkpointed:
            steps = cls.CHECKPOINTED_STEPS if compiled else 1
        else:
            steps = cls.COMPILED_STEPS if compiled else cls.STORED_STEPS
        return cls(pattern, count, min(steps, max(1, -(-n_steps // 8))), compiled)

    def __init__(self, pattern: SparsePattern, count: int, steps: int = 1,
                 compiled: bool | None = None):
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        self._kernel = compiled_kernel() if compiled is not False else None
        if compiled and self._kernel is None:
            raise ImportError("the compiled pass of the matrix cotangents needs numba: "
                              "pip install 'fesens[jit]', or pass compiled=False")
        indptr = pattern.indptr
        self.indptr = indptr
        # entries per row, for λ repeated over each row's entries by a numpy pass of one call
        self.counts = np.diff(indptr) if self._kernel is None else None
        self.rows = None  # a numpy pass of a buffer gathers λ per entry: intp rows
        if self._kernel is not None or steps == 1:  # λ read per row
            self.cols = pattern.cols
        else:  # gathers of a whole buffer: intp indices, which np.take need not convert
            self.rows = pattern.rows.astype(np.intp, copy=False)
            self.cols = pattern.cols.astype(np.intp)
        # rows starting each block of about BLOCK entries, and the last row
        entries = max(self.BLOCK // steps, 1)
        starts = np.searchsorted(indptr, np.arange(0, pattern.nnz, entries), side="right")
        self.row_bounds = np.unique(np.concatenate([[0], starts - 1, [pattern.shape[0]]]))
        self.entry_bounds = indptr[self.row_bounds]
        # one array, so that the compiled pass updates every sum of an entry together
        self._sums = np.zeros((count, pattern.nnz))
        self.sums = tuple(self._sums)
        # the buffered vectors, λ first, one row per call; np.take into kept buffers: 4x
        # faster than ``x[cols]``, which allocates
        self._vectors = np.empty((count + 1, steps if steps > 1 else 0, pattern.shape[0]))
        self._held = 0
        longest = int(np.diff(self.entry_bounds).max(initial=0)) if count else 0
        numpy_pass = self._kernel is None and count > 0
        self._lam_rows = np.empty(steps * longest if numpy_pass and steps > 1 else 0)
        self._product = np.empty(steps * longest if numpy_pass else 0)

    @property
    def compiled(self) -> bool:
        """Whether the compiled pass runs."""
        return self._kernel is not None

    def subtract(self, lam: np.ndarray, *xs: np.ndarray) -> None:
        """``sums[k] −= λ xs[k]ᵀ`` on the pattern (``λ``, ``xs[k]``: ``(n,)``); once the
        buffer is full or at :meth:`flush`."""
        if len(xs) != len(self.sums):
            raise ValueError(f"{len(self.sums)} sums take {len(self.sums)} vectors, got "
                             f"{len(xs)}")
        if not self.sums:
            return
        if self._vectors.shape[1] == 0:  # one call per pass: no buffer
            # float64, as a buffer's copy would make them
            lam, xs = np.asarray(lam, dtype=float), [np.asarray(x, dtype=float) for x in xs]
            if self._kernel is not None:
                xs_stacked = xs[0][None, None] if len(xs) == 1 else np.stack(xs)[:, None]
                self._kernel(self.indptr, self.cols, lam[None], xs_stacked, 1, self._sums)
            else:
                self._subtract(lam[None], [x[None] for x in xs])
            return
        for buffer, vector in zip(self._vectors, (lam, *xs), strict=True):
            buffer[self._held] = vector
        self._held += 1
        if self._held == self._vectors.shape[1]:
            self.flush()

    def flush(self) -> None:
        """Subtract the buffered products (each entry's in call order)."""
        held, self._held = self._held, 0
        if held == 0:
            return
        if self._kernel is not None:
            self._kernel(self.indptr, self.cols, self._vectors[0], self._vectors[1:], held,
                         self._sums)
        else:
            self._subtract(self._vectors[0, :held], self._vectors[1:, :held])

    def _subtract(self, lams: np.ndarray, xs) -> None:
        """The numpy pass: ``sums[k] −= Σ_i lams[i] xs[k][i]ᵀ``, the ``i`` in order
        (``(steps, n)``)."""
        held, entries, rows = lams.shape[0], self.entry_bounds, self.row_bounds
        for b in range(entries.size - 1):
            e0, e1 = entries[b], entries[b + 1]
            shape = (held, e1 - e0)  # contiguous, so np.take writes them unbuffered
            product = self._product[:held * (e1 - e0)].reshape(shape)
            if self.rows is None:
                lam_rows = np.repeat(lams[:, rows[b]:rows[b + 1]],
                                     self.counts[rows[b]:rows[b + 1]], axis=1)
            else:
                lam_rows = self._lam_rows[:held * (e1 - e0)].reshape(shape)
                # mode="clip": the indices are in range, and "raise" buffers ``out``
                np.take(lams, self.rows[e0:e1], axis=1, out=lam_rows, mode="clip")
            for x, total in zip(xs, self.sums, strict=True):
                np.take(x, self.cols[e0:e1], axis=1, out=product, mode="clip")
                product *= lam_rows
                if held == 1:
                    total[e0:e1] -= product[0]
                    continue
                # ((t − p_0) − p_1) − ...: a reduction over the first axis subtracts its
                # rows in order (subtract is not reordered, unlike a pairwise add)
                np.subtract(total[e0:e1], product[0], out=product[0])
                np.subtract.reduce(product, axis=0, out=total[e0:e1])
