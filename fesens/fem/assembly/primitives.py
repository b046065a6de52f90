"""The assembler as differentiable primitives on a cached pattern.

* :func:`assemble`: ``coefficients ↦ K`` with the precomputed cell matrices (the fast path:
  pattern and gather matrices built once per mesh): ``data(K) = Σ_k G_k c_k``, one mat-vec
  with the stacked gather matrix (:class:`~fesens.fem.assembly.assembler.Assembler`).
* :func:`assemble_at_points`: ``(X, c) ↦ K`` for cell matrices computed at node
  coordinates ``X``: ``data(K) = S vec(K_e)`` with the 0/1 entry matrix ``S`` of the same
  pattern.

The values are frozen (:mod:`fesens.readonly`), so the solver layer recognises them
without copies.

Backward, for a cotangent kept as outer products ``K̄ = Σ_p a_p b_pᵀ``
(:class:`~fesens.ad.sparse.OuterCotangent`, what a solve or a mat-vec produces):

    c̄_(k,e) = Σ_p a_(p,e)ᵀ K⁽ᵏ⁾_e b_(p,e)

batched over cells (einsum), where ``a_(p,e)`` gathers ``a_p`` at the cell's dofs, and
``K̄_e = Σ_p a_(p,e) b_(p,e)ᵀ`` where cell matrices are needed. That is
O(n_cells · n_cell_dofs²) and never touches the pattern; any other cotangent (values on
the pattern) takes ``c̄_k = G_kᵀ data(K̄)`` (``vec(K̄_e) = Sᵀ data(K̄)``).
"""

from __future__ import annotations

import copy
from functools import cached_property

import numpy as np

from fesens.ad.numpy_wrapper import untake
from fesens.ad.registry import defvjp_joint
from fesens.ad.sparse import OuterCotangent, PatternMatrix, SparsePattern
from fesens.ad.tracer import Box, primitive
from fesens.fem.assembly.assembler import Assembler, split_fields, stack_fields
from fesens.fem.integrals.shape import form_shape_cotangent
from fesens.fem.post.fields import dof_gradients
from fesens.readonly import freeze


class BlockOperator:
    """One block (``"ff"`` or ``"fc"``) of an :class:`Assembler` as a traceable operator.

    Attributes
    ----------
    pattern : SparsePattern
        The block's CSR pattern (constant; keys the solver cache).
    weights : tuple of float or None
        Set on a :meth:`folded` operator: its one coefficient field ``s`` stands for
        ``c_k = w_k s``.
    """

    def __init__(self, assembler: Assembler, block: str):
        pattern = assembler.ff if block == "ff" else assembler.fc
        self._assembler, self._block, self._block_pattern = assembler, block, pattern
        self.pattern = SparsePattern(pattern.indptr, pattern.indices, pattern.shape)
        self._gather = None  # built on first use, so an unused one costs no memory
        self.components = assembler.components
        self.weights = None
        # All cells share each component's matrix (structured grids): [K⁽⁰⁾ᵀ | K⁽¹⁾ᵀ | …].
        shared = all(Kk.shape[0] == 1 for Kk in self.components)
        self._shared_T = (np.concatenate([Kk[0].T for Kk in self.components], axis=1)
                          if shared else None)
        self.cell_dofs = assembler.cell_dofs
        self.n_dofs = assembler.n_dofs
        self.row_dofs = assembler.free
        self.col_dofs = assembler.free if block == "ff" else assembler.constrained

    @property
    def gather(self):
        """The block's gather matrix (of the folded component on a :meth:`folded` operator)."""
        if self._gather is None:
            self._gather = self._assembler.gather_matrix(self._block, self.weights)
        return self._gather

    @property
    def n_fields(self) -> int:
        """How many coefficient fields the operator takes."""
        return len(self.components) if self.weights is None else 1

    def folded(self, weights) -> BlockOperator:
        """This block for ``c_k = w_k s``: one field ``s``, one component ``Σ_k w_k K⁽ᵏ⁾``.

        Assembly is then one gather of ``n_cells`` columns instead of ``n_components``
        times as many (the assembler keeps the folded gather matrix). The pattern (and so
        the solver) is shared with this operator.
        """
        folded = copy.copy(self)
        folded.weights = tuple(float(w) for w in weights)
        folded._gather = None
        if self._shared_T is not None:
            nd = self._shared_T.shape[0]
            folded._shared_T = np.einsum("jki,k->ji", np.reshape(self._shared_T, (nd, -1, nd)),
                                         folded.weights)
        return folded

    def matrix(self, coefficients) -> PatternMatrix:
        """``K`` for raw coefficient arrays (each ``(n_cells,)``); its values are frozen."""
        return PatternMatrix(self.pattern, freeze(self.gather @ stack_fields(coefficients)))

    def cell_matrix(self, cell_matrices) -> PatternMatrix:
        """``K`` for raw cell matrices ``(n_cells, nd, nd)``; its values are frozen."""
        return PatternMatrix(self.pattern,
                             freeze(self.entry_matrix @ np.ravel(cell_matrices)))

    @cached_property
    def entry_matrix(self):
        """``S``, ``(nnz, n_cells · nd²)``: ``data = S vec(K_e)`` (built on first use)."""
        return self._block_pattern.entry_matrix()

    def cell_matrix_cotangent(self, g):
        """``K̄_e`` ``(n_cells, nd, nd)`` for a matrix cotangent ``g``."""
        n_cells, nd = self.cell_dofs.shape
        if not isinstance(g, OuterCotangent):
            return np.reshape(self.entry_matrix.T @ g, (n_cells, nd, nd))
        total = 0.0
        for a, b in g.pairs:
            a_cells = self._on_cells(a, self.row_dofs)
            b_cells = self._on_cells(b, self.col_dofs)
            spec = "eic,ejc->eij" if np.ndim(a_cells) == 3 else "ei,ej->eij"
            total = total + np.einsum(spec, a_cells, b_cells)
        return total

    def contract(self, g, model, coefficients, points):
        """``⟨K̄, K(X)⟩ = Σ_e Σ_k c_(k,e) ⟨K̄_e, K⁽ᵏ⁾_e(X)⟩`` for a matrix cotangent ``g``
        (traced in ``coefficients`` and ``points``; see :func:`assemble_at_points`)."""
        total = 0.0
        if isinstance(g, OuterCotangent):
            for a, b in g.pairs:
                values = model.cell_bilinear(points, self._on_cells(a, self.row_dofs),
                                             self._on_cells(b, self.col_dofs))
                for c, v in zip(coefficients, values, strict=True):
                    total = total + np.sum(c * v)
            return total
        K_bar = self.cell_matrix_cotangent(g)
        for c, Kk in zip(coefficients, model.cell_matrices(points), strict=True):
            total = total + np.sum(c * np.einsum("eij,eij->e", K_bar, Kk))
        return total

    def shape_cotangents(self, g, model, weights, points, fields) -> list:
        """``[X̄, c̄...]`` of :func:`assemble_at_points` for ``K̄ = Σ_p a_p b_pᵀ``, by the
        hand-derived rule of :mod:`fesens.fem.integrals.shape` (plain arrays).

        ``X̄`` is ``(n_points, dim)``; one ``c̄`` per coefficient field ``(n_cells,)``.
        """
        coefficients = unfolded(weights, fields)
        geometry = model.geometry(points)
        n_comp, mesh = model.n_components, model.mesh
        points_bar, totals = 0.0, [0.0] * len(coefficients)
        for a, b in g.pairs:
            grad_a = dof_gradients(geometry, self._on_cells(a, self.row_dofs), n_comp)
            grad_b = dof_gradients(geometry, self._on_cells(b, self.col_dofs), n_comp)
            values = model.integrand_values(grad_a, grad_b)
            flux_a, flux_b = model.integrand_fluxes(grad_a, grad_b, coefficients)
            density = sum(c[:, None] * v for c, v in zip(coefficients, values, strict=True))
            points_bar = points_bar + form_shape_cotangent(
                geometry, mesh.cells, mesh.n_points, density, flux_a, flux_b, grad_a, grad_b)
            totals = [t + np.sum(geometry.dx * v, axis=1)
                      for t, v in zip(totals, values, strict=True)]
        if weights is not None:
            totals = [sum(w * t for w, t in zip(weights, totals, strict=True))]
        return [points_bar, *totals]

    def _on_cells(self, vector, block_dofs):
        """A block-dof vector ``(n_block,)`` or ``(n_block, k)`` at each cell's dofs."""
        shape = (self.n_dofs,) + tuple(np.shape(vector)[1:])
        return untake(vector, block_dofs, shape, unique=True)[self.cell_dofs]

    def coefficient_cotangents(self, g) -> list:
        """``c̄_k`` for every component, for a matrix cotangent ``g``."""
        if not isinstance(g, OuterCotangent):
            return split_fields(self.gather.T @ g, self.n_fields)
        totals = 0.0
        for a, b in g.pairs:
            a_cells = self._on_cells(a, self.row_dofs)
            b_cells = self._on_cells(b, self.col_dofs)
            totals = totals + self._cell_products(a_cells, b_cells)
        return [totals[:, k] for k in range(self.n_fields)]

    def _cell_products(self, a_cells, b_cells):
        """``a_eᵀ K⁽ᵏ⁾_e b_e``, ``(n_cells, n_fields)``, for cell vectors ``(n_cells, nd)``
        (or ``(n_cells, nd, n_cases)``, summed over the cases)."""
        several = np.ndim(a_cells) == 3
        if self._shared_T is None:
            spec = "eic,eij,ejc->e" if several else "ei,eij,ej->e"
            products = np.stack([np.einsum(spec, a_cells, Kk, b_cells)
                                 for Kk in self.components], axis=1)
            if self.weights is None:
                return products
            return np.reshape(products @ np.asarray(self.weights), (-1, 1))
        n_cells, nd = np.shape(a_cells)[:2]
        if not several:  # one BLAS product for all fields: (K⁽ᵏ⁾ b_e)_i at [e, k, i]
            Kb = np.reshape(b_cells @ self._shared_T, (n_cells, -1, nd))
            return np.einsum("eki,ei->ek", Kb, a_cells)
        b_rows = np.reshape(np.transpose(b_cells, (0, 2, 1)), (-1, nd))
        Kb = np.reshape(b_rows @ self._shared_T, (n_cells, -1, self.n_fields, nd))
        return np.einsum("ecki,eic->ek", Kb, a_cells)


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


def unfolded(weights, fields) -> list:
    """The coefficients ``c_k``: ``fields`` itself, or ``w_k s`` for folded ``(w, [s])``."""
    return list(fields) if weights is None else [w * fields[0] for w in weights]


@primitive
def assemble_at_points(operator: BlockOperator, model, weights, points, *fields
                       ) -> PatternMatrix:
    """The block matrix ``Σ_e Σ_k c_(k,e) K⁽ᵏ⁾_e(X)`` for node coordinates ``X``.

    Parameters
    ----------
    operator : BlockOperator
    model : LinearModel
        Provides ``cell_matrices(points)``, ``cell_bilinear(points, a, b)`` and, optionally,
        ``integrand_values``/``integrand_fluxes``.
    weights : tuple of float or None
        Folded weights (``c_k = w_k s``, ``fields = [s]``) or None.
    points : array
        ``(n_points, dim)``, differentiable.
    *fields : array
        Coefficient fields ``(n_cells,)``, differentiable.

    The VJP never forms ``∂K_e/∂X``: for a cotangent ``K̄ = Σ_p a_p b_pᵀ`` (a solve's) it
    differentiates the scalar ``Σ_p Σ_e Σ_k c_(k,e) a_(p,e)ᵀ K⁽ᵏ⁾_e(X) b_(p,e)``. When the
    physics declares its integrand (``model.has_integrand()``) and nothing is traced twice,
    by the hand-derived rule of :mod:`fesens.fem.integrals.shape` (:meth:`BlockOperator.
    shape_cotangents`); otherwise by tracing ``model.cell_bilinear`` (the field gradients
    at the quadrature points, or the cell matrices) with the traced geometry.
    """
    coefficients = unfolded(weights, fields)
    components = model.cell_matrices(points)
    cell_matrices = coefficients[0][:, None, None] * components[0]
    for c, Kk in zip(coefficients[1:], components[1:], strict=True):
        cell_matrices += c[:, None, None] * Kk
    return operator.cell_matrix(cell_matrices)


def _assemble_at_points_vjp(argnums, ans, operator, model, weights, points, *fields):
    from fesens.ad.api import vjp as pullback_of  # the AD entry points sit above the rules

    def vjp(g):
        if _hand_derived(g, model, points, fields):
            cotangents = operator.shape_cotangents(g, model, weights, points, fields)
            return tuple(cotangents[i - 3] for i in argnums)

        def contracted(X, *c):
            return operator.contract(g, model, unfolded(weights, c), X)

        nums = tuple(i - 3 for i in argnums)
        _, pull = pullback_of(contracted, points, *fields, argnums=nums)
        return tuple(pull(1.0))

    return vjp


defvjp_joint(assemble_at_points, _assemble_at_points_vjp)


def _hand_derived(g, model, points, fields) -> bool:
    """Whether :meth:`BlockOperator.shape_cotangents` applies: a cotangent of outer
    factors, a physics that declares its integrand, and nothing traced (first order)."""
    if not isinstance(g, OuterCotangent) or not model.has_integrand():
        return False
    values = [points, *fields, *(v for pair in g.pairs for v in pair)]
    return not any(type(v) is Box for v in values)
