"""The J2 return map at the quadrature points of a model, as one traced primitive, and its
consistent tangent as the block a displacement gradient of ``dim`` components needs.

:func:`point_increment` packs :func:`~fesens.physics.j2_plasticity.return_map`'s results
per point into one row (:data:`COLUMNS`), so that an increment's stresses and internal
variables are one node of the tape; its VJP is
:func:`~fesens.physics.j2_plasticity.update_vjp`'s pullback (the branch, elastic or plastic,
of the values; the implicit function theorem on the consistency condition). The last three
columns (the plastic points, their multiplier and trial norm) are what the closed-form
tangent reads; they are not differentiated.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

from fesens.ad import defvjp, defvjp_joint, primitive
from fesens.physics.j2_hardening import CONSTANT_NAMES, J2Material, uniaxial_yield_slope
from fesens.physics.j2_plasticity import J2State, return_map, update_vjp

#: The columns of a packed row and their widths: stress ``σ`` (9), plastic strain ``εᵖ``
#: (9), equivalent plastic strain ``ᾱ`` (1), back stress ``β`` (9), then the plastic flag,
#: the multiplier ``Δγ`` and ``‖ξ_tr‖`` (1 each, not differentiated).
COLUMNS = (("stress", 9), ("plastic_strain", 9), ("equivalent_plastic_strain", 1),
           ("back_stress", 9), ("plastic", 1), ("multiplier", 1), ("trial_norm", 1))
#: The internal variables among :data:`COLUMNS`, in the order of :class:`J2State`.
STATE_NAMES = ("plastic_strain", "equivalent_plastic_strain", "back_stress")
#: The width of a packed row.
WIDTH = sum(width for _, width in COLUMNS)
_SLICES = MappingProxyType({name: slice(end - width, end) for (name, width), end in zip(
    COLUMNS, np.cumsum([width for _, width in COLUMNS]).tolist(), strict=True)})
_SHAPES = MappingProxyType({9: (3, 3), 1: ()})


def _column(packed, name: str, dim: int = 3):
    part = packed[:, _SLICES[name]]
    width = _SLICES[name].stop - _SLICES[name].start
    shaped = np.reshape(part, (np.shape(packed)[0], *_SHAPES[width]))
    return shaped[:, :dim, :dim] if width == 9 and dim < 3 else shaped


column = primitive(_column, "j2_packed_column")
column.__doc__ = """Column ``name`` of packed rows ``(n, WIDTH)``: ``(n, 3, 3)`` or ``(n,)``, a
tensor's leading ``(n, dim, dim)`` block for ``dim < 3`` (traced). A primitive of its own:
its pullback writes into one zero array, where an index's pullback would add its cotangent
in with ``np.add.at`` (several times slower on the ``(n, WIDTH)`` rows of an increment)."""


def _column_vjp(ans, packed, name: str, dim: int = 3):
    def vjp(g):
        shape = np.shape(packed)
        width = _SLICES[name].stop - _SLICES[name].start
        g = np.asarray(g, dtype=float)
        if width == 9 and dim < 3:
            full = np.zeros((shape[0], 3, 3))
            full[:, :dim, :dim] = g
            g = full
        out = np.zeros(shape)
        out[:, _SLICES[name]] = np.reshape(g, (shape[0], width))
        return out

    return vjp


defvjp(column, _column_vjp)


def _small_strain(grad_q):
    n_cells, n_qp, dim = np.shape(grad_q)[:3]
    strain = np.zeros((n_cells * n_qp, 3, 3))
    grad = np.reshape(grad_q, (n_cells * n_qp, dim, dim))
    strain[:, :dim, :dim] = 0.5 * (grad + np.swapaxes(grad, 1, 2))
    return strain


small_strain = primitive(_small_strain, "j2_small_strain")
small_strain.__doc__ = """The 3D small strains ``ε = sym ∇u`` ``(n_cells·n_qp, 3, 3)`` of the
displacement gradients ``(n_cells, n_qp, dim, dim)`` (plane strain for ``dim = 2``:
``ε_i3 = 0``), traced; its pullback is ``sym ε̄`` of the leading block. Written into one
zero array rather than embedded by an ``einsum`` with ``[1 0; 0 1; 0 0]`` on both sides
(ten times slower at the points of a mesh)."""


def _small_strain_vjp(ans, grad_q):
    def vjp(g):
        n_cells, n_qp, dim = np.shape(grad_q)[:3]
        block = np.asarray(g, dtype=float)[:, :dim, :dim]
        return np.reshape(0.5 * (block + np.swapaxes(block, 1, 2)), np.shape(grad_q))

    return vjp


defvjp(small_strain, _small_strain_vjp, uses_ans=False)


def material_of(constants: dict) -> J2Material:
    """The :class:`J2Material` of plain per-point constants (``{name: (n,)}``; a zero
    saturation rate everywhere: no Voce term, the saturation stress not read)."""
    values = {name: np.asarray(constants[name], dtype=float) for name in CONSTANT_NAMES}
    if not np.any(values["saturation_rate"]):
        values["saturation_stress"] = None
    return J2Material(**values)


def _increment(strain, plastic_strain, alpha, back_stress, *constants, memo=None):
    material = material_of(dict(zip(CONSTANT_NAMES, constants, strict=True)))
    update = return_map(material, strain, J2State(plastic_strain, alpha, back_stress))
    return _packed(update)


def _packed(update) -> np.ndarray:
    n = update.stress.shape[0]
    return np.concatenate([
        update.stress.reshape(n, 9), update.state.plastic_strain.reshape(n, 9),
        update.state.equivalent_plastic_strain[:, None], update.state.back_stress.reshape(n, 9),
        update.plastic[:, None].astype(float), update.multiplier[:, None],
        update.trial_norm[:, None]], axis=1)


point_increment = primitive(_increment, "j2_point_increment")
point_increment.__doc__ = """One increment of ``n`` material points as packed rows ``(n, WIDTH)``
(:data:`COLUMNS`) of the total strains ``(n, 3, 3)``, the previous state (``εᵖ`` ``(n, 3,
3)``, ``ᾱ`` ``(n,)``, ``β`` ``(n, 3, 3)``) and the constants ``(n,)`` each in the order of
:data:`~fesens.physics.j2_hardening.CONSTANT_NAMES`; traced in all of them. ``memo``: a
new dict per call, kept on the tape's node, where the VJP keeps its pullback for the
tape's later sweeps (an adjoint pulls one increment back twice)."""


def _increment_vjp(argnums, ans, strain, plastic_strain, alpha, back_stress, *constants,
                   memo=None):
    pullback = None if memo is None else memo.get("pullback")
    if pullback is None:
        material = material_of(dict(zip(CONSTANT_NAMES, constants, strict=True)))
        # the branch and multiplier of the forward's return map (its packed rows)
        known = (column(ans, "multiplier"), column(ans, "plastic") > 0.5,
                 column(ans, "trial_norm"))
        _, pullback = update_vjp(material, strain,
                                 J2State(plastic_strain, alpha, back_stress),
                                 multiplier=known, with_values=False)
        if memo is not None:  # a later sweep of the same tape reuses it
            memo["pullback"] = pullback

    def vjp(g):
        g = np.asarray(g, dtype=float)
        state_bar = J2State(*(column(g, name) for name in STATE_NAMES))
        strain_bar, previous, constants_bar = pullback(column(g, "stress"), state_bar)
        bars = (strain_bar, *previous, *(constants_bar[name] for name in CONSTANT_NAMES))
        return [bars[i] for i in argnums]

    return vjp


defvjp_joint(point_increment, _increment_vjp)


def tangent_block(packed: np.ndarray, constants: dict, dim: int) -> np.ndarray:
    """The consistent tangent ``∂σ_ij/∂ε_kl`` restricted to ``i, j, k, l < dim``,
    ``(n, dim, dim, dim, dim)`` (plain), for linear kinematic hardening: Box 3.2 of Simo &
    Hughes 1998, ``C = κ 1⊗1 + 2μθ I_dev − 2μθ̄ n⊗n`` with ``θ = 1 − 2μΔγ/‖ξ_tr‖`` and
    ``θ̄ = 1/(1 + (σ_y' + H_k)/(3μ)) − (1 − θ)`` at the plastic points (``θ = 1``,
    ``θ̄ = 0`` elsewhere), built as the block itself (plane strain: the in-plane block of
    the 3D tangent) rather than the ``(n, 3, 3, 3, 3)`` array."""
    E, nu = constants["E"], constants["nu"]
    kappa, mu = E / (3.0 * (1.0 - 2.0 * nu)), E / (2.0 * (1.0 + nu))
    plastic = column(packed, "plastic") > 0.5
    norm = np.where(plastic, column(packed, "trial_norm"), 1.0)
    theta = np.where(plastic, 1.0 - 2.0 * mu * column(packed, "multiplier") / norm, 1.0)
    slope = uniaxial_yield_slope(constants, column(packed, "equivalent_plastic_strain"))
    hardening = slope + constants["kinematic_modulus"]
    theta_bar = np.where(plastic, 1.0 / (1.0 + hardening / (3.0 * mu)) - (1.0 - theta), 0.0)
    stress = column(packed, "stress")
    relative = stress - (np.trace(stress, axis1=1, axis2=2) / 3.0)[:, None, None] * np.eye(3)
    relative = relative - column(packed, "back_stress")
    size = np.sqrt(np.einsum("nij,nij->n", relative, relative))
    flow = np.reshape((relative / np.where(size > 0.0, size, 1.0)[:, None, None])
                      [:, :dim, :dim], (-1, dim * dim))
    shear = 2.0 * mu * theta
    # as (n, dim², dim²) rows (ij), columns (kl): the n⊗n term everywhere, then the few
    # entries of 1⊗1 (ii, kk) and of the symmetric identity (ij, ij) and (ij, ji) added in
    # place, not full arrays of their own
    block = np.einsum("np,nq->npq", flow, flow)
    block *= -(2.0 * mu * theta_bar)[:, None, None]
    diagonal = np.arange(dim) * (dim + 1)
    block[:, diagonal[:, None], diagonal[None, :]] += (kappa - shear / 3.0)[:, None, None]
    rows = np.arange(dim * dim)
    half = 0.5 * shear[:, None]
    block[:, rows, rows] += half
    block[:, rows, (rows % dim) * dim + rows // dim] += half
    return np.reshape(block, (-1,) + (dim,) * 4)


def derived_tangent_block(strain, state: J2State, constants: dict, dim: int) -> np.ndarray:
    """The tangent block of :func:`tangent_block` with Armstrong & Frederick's recovery,
    from :func:`~fesens.physics.j2_plasticity.return_map`'s forward-mode tangent (plain)."""
    update = return_map(material_of(constants), strain, state, tangent=True)
    return update.tangent[:, :dim, :dim, :dim, :dim]
