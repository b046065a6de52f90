"""The assembler as a differentiable primitive: ``coefficients ↦ K`` on a cached pattern.

Forward: ``data(K) = Σ_k G_k c_k`` (:class:`~fesens.fem.assembler.Assembler`).
Backward, for a cotangent kept as outer products ``K̄ = Σ_p a_p b_pᵀ``
(:class:`~fesens.ad.sparse.OuterCotangent`, what a solve or a mat-vec produces):

    c̄_(k,e) = Σ_p a_(p,e)ᵀ K⁽ᵏ⁾_e b_(p,e)          (DESIGN.md rule 3)

batched over cells (einsum), where ``a_(p,e)`` gathers ``a_p`` at the cell's dofs. That is
O(n_cells · n_cell_dofs²) and never touches the pattern; any other cotangent (values on
the pattern) takes ``c̄_k = G_kᵀ data(K̄)``.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import untake
from fesens.ad.registry import defvjp_joint
from fesens.ad.sparse import OuterCotangent, PatternMatrix, SparsePattern
from fesens.ad.tracer import primitive
from fesens.fem.assembler import Assembler


class BlockOperator:
    """One block (``"ff"`` or ``"fc"``) of an :class:`Assembler` as a traceable operator.

    Attributes
    ----------
    pattern : SparsePattern
        The block's CSR pattern (constant; keys the solver cache).
    """

    def __init__(self, assembler: Assembler, block: str):
        pattern = assembler.ff if block == "ff" else assembler.fc
        self.pattern = SparsePattern(pattern.indptr, pattern.indices, pattern.shape)
        self.gathers = assembler.gather_matrices(block)
        self.components = assembler.components
        self.cell_dofs = assembler.cell_dofs
        self.n_dofs = assembler.n_dofs
        self.row_dofs = assembler.free
        self.col_dofs = assembler.free if block == "ff" else assembler.constrained

    def matrix(self, coefficients) -> PatternMatrix:
        """``K`` for raw coefficient arrays (each ``(n_cells,)``)."""
        data = self.gathers[0] @ coefficients[0]
        for G, c in zip(self.gathers[1:], coefficients[1:], strict=True):
            data += G @ c
        return PatternMatrix(self.pattern, data)

    def _on_cells(self, vector, block_dofs):
        """A block-dof vector ``(n_block,)`` or ``(n_block, k)`` at each cell's dofs."""
        shape = (self.n_dofs,) + tuple(np.shape(vector)[1:])
        return untake(vector, block_dofs, shape, unique=True)[self.cell_dofs]

    def coefficient_cotangents(self, g) -> list:
        """``c̄_k`` for every component, for a matrix cotangent ``g``."""
        if not isinstance(g, OuterCotangent):
            return [G.T @ g for G in self.gathers]
        totals = [0.0] * len(self.components)
        for a, b in g.pairs:
            a_cells = self._on_cells(a, self.row_dofs)
            b_cells = self._on_cells(b, self.col_dofs)
            several = np.ndim(a_cells) == 3  # (n_cells, nd, n_cases)
            for k, Kk in enumerate(self.components):
                if Kk.shape[0] == 1:  # one matrix shared by all cells (BLAS matmul)
                    Kb = Kk[0] @ b_cells if several else b_cells @ Kk[0].T
                else:
                    Kb = Kk @ b_cells if several else (Kk @ b_cells[:, :, None])[:, :, 0]
                contraction = a_cells * Kb
                totals[k] = totals[k] + np.sum(contraction, axis=(1, 2) if several else 1)
        return totals


@primitive
def assemble(operator: BlockOperator, *coefficients) -> PatternMatrix:
    """The block matrix for per-cell coefficients ``c_k`` (each ``(n_cells,)``)."""
    return operator.matrix(coefficients)


def _assemble_vjp(argnums, ans, operator, *coefficients):
    def vjp(g):
        cotangents = operator.coefficient_cotangents(g)
        return tuple(cotangents[i - 1] for i in argnums)

    return vjp


defvjp_joint(assemble, _assemble_vjp)
