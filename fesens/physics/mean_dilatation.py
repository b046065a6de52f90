"""Finite strain without volumetric locking: the mean-dilatation (F-bar) energy.

A nearly incompressible law (``κ ≫ μ``, ``ν → 1/2``) locks on low-order cells: ``J = 1`` at
every quadrature point leaves too few displacements, and a plain quad4's tip deflection is
a fraction of the converged one. The mean-dilatation formulation (Simo, Taylor & Pister,
*Comput. Methods Appl. Mech. Engrg.* 51, 1985, 177–208; written with the modified
deformation gradient of de Souza Neto, Perić, Dutko & Owen, *Int. J. Solids Struct.* 33,
1996, 3277–3296) asks for the volume change only on average over each cell: with the
cell's mean dilatation and the modified deformation gradient at its points

    θ_e = (1/V_e) ∫_e J dV,       F̄ = (θ_e / J)^{1/d} F       (det F̄ = θ_e),

the stored energy is ``Π(u) = Σ_e ∫_e W(F̄) dV`` (``d`` = 2 in plane strain, where
``F_zz = 1``; 3 in 3D). ``θ`` is a function of the displacements, so ``Π`` is an energy of
``u`` alone: its tangent is symmetric, and Newton, the energy line search and the
one-solve adjoint of :class:`~fesens.fem.model.nonlinear.NonlinearModel` apply unchanged,
for every law of :data:`~fesens.physics.hyperelastic_law.HYPERELASTIC_LAWS` and a user's.

With ``W̄(F, θ) = W((θ/J)^{1/d} F)``, ``P̂ = P(F̄)``, ``s = P̂ : F̄`` and ``G = F⁻ᵀ``, its
derivatives are ``∂W̄/∂F = α P̂ − (s/d) G`` (``α = (θ/J)^{1/d}``) and ``∂W̄/∂θ = s/(dθ)``;
``∂θ/∂u_a = (1/V) ∫ J G : ∇N_a dV``, so the residual is that of the point flux

    P_eff = α P̂ + (1/d) (J s̄/θ − s) G,    s̄ = (1/V_e) ∫_e s dV

(the point's pressure replaced by the cell's mean), traced like any flux, so the gradient
in every parameter (law constants, the scale, loads, prescribed values, node coordinates)
is the model's adjoint. Its tangent is the point part ``∫ ∇N_a : (W̄_FF + (Q/V) ∂(JG)/∂F)
: ∇N_b`` (``Q = ∫ ∂W̄/∂θ dV``) plus the cell's rank-one terms ``b cᵀ + c bᵀ + h b bᵀ``
with ``b = ∂θ/∂u``, ``c_a = ∫ ∂²W̄/∂F∂θ : ∇N_a``, ``h = ∫ ∂²W̄/∂θ²``, vectorized over
cells and points from the law's ``P`` and ``A`` at ``F̄`` by the chain rule.

The stresses a solution reports are the law's at ``F̄`` (the F-bar convention).
"""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import getval, inv
from fesens.fem.integrals.kernels import gradient_form, transposed_tangent_action
from fesens.physics.energy_law import double_contraction, swap, volume_change
from fesens.physics.hyperelastic_solution import FiniteStrainSolution
from fesens.physics.hyperelasticity import FiniteStrainElasticity

#: The formulation's name (``FiniteStrainElasticity(..., formulation=MEAN_DILATATION)``).
MEAN_DILATATION = "mean_dilatation"


def _per_point(values):
    """``(n_cells, n_qp)`` values as ``(n_cells, n_qp, 1, 1)``."""
    return np.reshape(values, np.shape(values) + (1, 1))


def bar_kinematics(grad_q, weights) -> tuple:
    """``(α, H̄)`` of the displacement gradients ``H`` ``(n_cells, n_qp, d, d)`` and the
    weights ``w`` ``(n_cells or 1, n_qp)``: ``α = (θ/J)^{1/d}`` ``(n_cells, n_qp)`` with the
    cell's mean dilatation ``θ = Σ w J / Σ w``, and ``H̄ = F̄ − I = (α − 1) F + H``; ``α − 1``
    and ``θ − 1`` from ``J − 1`` without cancellation at small strains (traced)."""
    d = np.shape(grad_q)[-1]
    change = volume_change(grad_q)  # J − 1, (e, q)
    mean_change = np.sum(weights * change, axis=1, keepdims=True) / np.sum(
        weights, axis=1, keepdims=True)  # θ − 1, (e, 1)
    alpha_minus_one = np.expm1((np.log1p(mean_change) - np.log1p(change)) / d)
    F = grad_q + np.eye(d)
    return alpha_minus_one + 1.0, _per_point(alpha_minus_one) * F + grad_q


class MeanDilatationSolution(FiniteStrainSolution):
    """A solved :class:`MeanDilatationElasticity`: its stresses and ``J`` are the law's at
    ``F̄`` (``det F̄ = θ``, the cell's mean dilatation)."""

    def _law_inputs(self) -> tuple:
        geometry, _, grad_q = self.model._at_quadrature(self.u, self.points)
        return geometry, bar_kinematics(grad_q, self.model._weights(geometry))[1]

    _piola_inputs = _law_inputs


class MeanDilatationElasticity(FiniteStrainElasticity):
    """:class:`~fesens.physics.hyperelasticity.FiniteStrainElasticity` with the
    mean-dilatation energy ``Σ_e ∫ W(F̄) dV`` (see the module docstring): locking-free for
    nearly incompressible laws on every volume cell type, its adjoint the model's.

    Made by ``FiniteStrainElasticity(mesh, ..., formulation="mean_dilatation")`` (or a
    config's ``[physics] formulation = "mean_dilatation"``); the parameters, loads and
    solves are those of the displacement formulation.

    Examples
    --------
    >>> from fesens.mesh import rectangle
    >>> model = FiniteStrainElasticity(rectangle(8, 2, 1.0, 0.25), E=1.0, nu=0.4999,
    ...                                formulation="mean_dilatation")
    >>> type(model).__name__
    'MeanDilatationElasticity'
    """

    solution_class = MeanDilatationSolution
    formulation_name = MEAN_DILATATION

    def __init__(self, mesh, E=1.0, nu=0.3, *, formulation: str = MEAN_DILATATION, **options):
        super().__init__(mesh, E, nu, formulation=formulation, **options)
        if self.void_treatment != "none":
            raise ValueError(
                f"formulation={MEAN_DILATATION!r} takes void_treatment='none' only (the "
                f"energy interpolation blends a point's linear and finite-strain energies, "
                f"which the cell's mean dilatation does not split); got void_treatment="
                f"{self.void_treatment!r}: use formulation='displacement' with it")

    # ------------------------------------------------------------ residual (traced)
    def _point_fluxes(self, geometry, u_q, grad_q, fields):
        """``P_eff = α P̂ + (1/d)(J s̄/θ − s) G`` ``(n_cells, n_qp, d, d)`` (traced)."""
        weights = self._weights(geometry)
        d = np.shape(grad_q)[-1]
        alpha, bar = bar_kinematics(grad_q, weights)
        P_hat = self.flux(u_q, bar, fields)
        F = grad_q + np.eye(d)
        s = double_contraction(P_hat, _per_point(alpha) * F)
        J = 1.0 + volume_change(grad_q)
        theta = 1.0 + np.sum(weights * (J - 1.0), axis=1, keepdims=True) / np.sum(
            weights, axis=1, keepdims=True)
        mean_s = np.sum(weights * s, axis=1, keepdims=True) / np.sum(weights, axis=1,
                                                                      keepdims=True)
        G = swap(inv(F))
        return _per_point(alpha) * P_hat + _per_point((J * mean_s / theta - s) / d) * G

    def stored_energy(self, u, fields: dict, points=None):
        """``Σ_e ∫ s W(F̄) t dV`` (a float; traced when an input is)."""
        geometry, u_q, grad_q = self._at_quadrature(u, points)
        weights = self._weights(geometry)
        return np.sum(weights * self.energy(u_q, bar_kinematics(grad_q, weights)[1], fields))

    # ------------------------------------------------------------ tangent (plain)
    def _tangent_parts(self, u, fields: dict, points) -> tuple:
        """``(weights (e, q), dNdx (e, q, n, d), A_eff (e, q, d, d, d, d), b, c (e, n·d),
        h (e,))`` of the tangent ``K = ∫ ∇N : A_eff : ∇N + b cᵀ + c bᵀ + h b bᵀ`` at the
        state ``u`` (plain arrays; see the module docstring)."""
        points = None if points is None else np.asarray(getval(points))
        geometry, u_q, grad_q = self._at_quadrature(np.asarray(getval(u)), points)
        fields = {key: np.asarray(getval(value)) for key, value in fields.items()}
        n_cells, n_qp, d = np.shape(grad_q)[:3]
        weights = np.broadcast_to(self._weights(geometry), (n_cells, n_qp))
        dNdx = np.broadcast_to(geometry.dNdx, (n_cells, *np.shape(geometry.dNdx)[1:]))
        alpha, bar = bar_kinematics(grad_q, weights)
        P_hat = self.flux(u_q, bar, fields)
        A_hat = self.flux_tangent(u_q, bar, fields)[0]
        F = grad_q + np.eye(d)
        G = swap(inv(F))
        J = 1.0 + volume_change(grad_q)
        volume = np.sum(weights, axis=1)
        theta = np.sum(weights * J, axis=1) / volume  # (e,)
        a = _per_point(alpha)
        s = double_contraction(P_hat, a * F)
        AF = np.einsum("eqiJkL,eqkL->eqiJ", A_hat, F, optimize=True)
        M = a * AF + P_hat  # ∂s/∂F̄ (A has the major symmetry)
        MF = double_contraction(M, F)
        outer = np.einsum("eqiJ,eqkL->eqiJkL", G, G, optimize=True)
        crossed = np.einsum("eqiL,eqkJ->eqiJkL", G, G, optimize=True)
        r = 1.0 / (d * theta)[:, None]  # 1/(dθ), (e, 1)
        a6 = np.reshape(alpha, alpha.shape + (1,) * 4)
        W_FF = (a6 * a6 * A_hat
                - np.einsum("eqiJ,eqkL->eqiJkL", (a * a * AF + a * P_hat) / d, G,
                            optimize=True)
                - np.einsum("eqiJ,eqkL->eqiJkL", G, a * M / d, optimize=True)
                + np.reshape(alpha * MF / d ** 2, a6.shape) * outer
                + np.reshape(s / d, a6.shape) * crossed)
        W_Ftheta = _per_point(r) * (a * P_hat + a * a * AF - _per_point(alpha * MF / d) * G)
        W_thetatheta = r * r * (alpha * MF - d * s)
        Q = np.sum(weights * s * r, axis=1)  # ∫ ∂W̄/∂θ
        J6 = np.reshape(J, a6.shape)
        A_eff = W_FF + np.reshape(Q / volume, (-1, 1, 1, 1, 1, 1)) * J6 * (outer - crossed)
        b = np.einsum("eq,eqiJ,eqaJ->eai", weights, _per_point(J) * G, dNdx,
                      optimize=True) / volume[:, None, None]
        c = np.einsum("eq,eqiJ,eqaJ->eai", weights, W_Ftheta, dNdx, optimize=True)
        h = np.sum(weights * W_thetatheta, axis=1)
        return (weights, dNdx, A_eff, np.reshape(b, (n_cells, -1)),
                np.reshape(c, (n_cells, -1)), h)

    def _cell_tangents(self, u, fields: dict, points) -> np.ndarray:
        weights, dNdx, A_eff, b, c, h = self._tangent_parts(u, fields, points)
        n_cells, nd = b.shape
        K = np.reshape(gradient_form(weights, dNdx, A_eff), (n_cells, nd, nd))
        K += b[:, :, None] * (c + h[:, None] * b)[:, None, :] + c[:, :, None] * b[:, None, :]
        return K

    def transposed_tangent(self, u, fields: dict, points=None):
        """``v ↦ (∂R/∂u)ᵀ v`` per cell ``(n_cells, n_nodes, dim)`` (plain arrays), never
        formed: the point part and the cell's rank-one terms."""
        weights, dNdx, A_eff, b, c, h = self._tangent_parts(u, fields, points)
        point_part = transposed_tangent_action(weights, dNdx, A_eff)

        def action(v: np.ndarray) -> np.ndarray:
            flat = np.reshape(v, b.shape)
            b_v, c_v = np.sum(b * flat, axis=1), np.sum(c * flat, axis=1)
            rank_one = b * (c_v + h * b_v)[:, None] + c * b_v[:, None]
            return point_part(v) + np.reshape(rank_one, np.shape(v))

        plain = {key: np.asarray(getval(value)) for key, value in fields.items()}
        return self._with_follower_stiffness(
            action, np.asarray(getval(u)), plain,
            None if points is None else np.asarray(getval(points)))
