"""A finite-strain law is its energy: ``W(H, *constants)`` per point, ``P`` and ``A`` derived.

:meth:`HyperelasticLaw.from_energy` makes a law of a stored energy density written in the
traced numpy subset over arrays of points, ``H = F − I`` ``(..., d, d)``:
``P = ∂W/∂H`` by one reverse pass, ``A = ∂²W/∂H²`` by reverse over reverse
(:mod:`fesens.ad.pointwise`, vectorized over every cell and quadrature point), and the
plane-strain ``P_zz`` as ``∂W/∂H_zz`` at the 3D ``H`` with ``H_zz = 0`` (the energy then
accepts 3D ``H`` too; else give ``out_of_plane``). Hand-written ``first_piola``,
``tangent`` and ``out_of_plane`` are used when given (a speed-up, checked against the
derived ones by the tests). :meth:`HyperelasticLaw.from_invariants` makes a law of an
isotropic energy written in the invariants of ``C``, ``W(I₁, I₂, J, *constants)``:
:mod:`fesens.ad` then derives only ``∂W/∂I_a`` and ``∂²W/∂I_a∂I_b`` and ``P``, ``A`` follow
from the invariants' closed-form derivatives (:mod:`fesens.physics.kinematics`).

A law made from a user's energy is checked (``check_points=True``): once, when it is made,
a rotation test ``W(QF) = W(F)`` at a few random 3D rotations and deformations (one
vectorized call of ``W``, microseconds) refuses a frame-dependent energy; then at every
evaluation the shape of ``W`` and the finiteness of ``W``, ``P`` and ``A`` are checked and
the first failing quadrature point is named with its index and its ``H``.

>>> import numpy as np
>>> from fesens.physics.energy_law import HyperelasticLaw, log_jacobian, strain_part, trace
>>> def energy(H, mu, kappa):        # a compressible neo-Hookean of (μ, κ)
...     log_J = log_jacobian(H)
...     return 0.5 * mu * (trace(strain_part(H)) - 2 * log_J) + 0.5 * kappa * log_J**2
>>> law = HyperelasticLaw.from_energy("my-law", "W = μ/2 (I_C − 3 − 2 ln J) + κ/2 (ln J)²",
...                                   energy, constants=("mu", "kappa"))
>>> H = np.array([[[0.1, 0.0], [0.0, 0.0]]])  # (1 point, 2, 2): plane strain
>>> law.first_piola(H, 1.0, 2.0).shape, law.tangent(H, 1.0, 2.0).shape
((1, 2, 2), (1, 2, 2, 2, 2))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.ad.pointwise import pointwise_grad, pointwise_hessian
from fesens.physics.elastic_law import von_mises
from fesens.physics.kinematics import (  # noqa: F401 - the kinematics, re-exported
    deformation_gradient,
    double_contraction,
    embedded,
    invariant_first_piola,
    invariant_out_of_plane,
    invariant_tangent,
    jacobian,
    log_jacobian,
    per_point,
    principal_invariants,
    strain_part,
    swap,
    trace,
    volume_change,
)


# ------------------------------------------------------------------ small strain
def small_strain_response(psi: Callable, strain, *params) -> tuple:
    """``σ = ∂ψ/∂ε`` ``(..., d, d)`` (traced) and ``C = ∂²ψ/∂ε²`` ``(..., d, d, d, d)``
    (plain) of a small-strain energy density ``ψ(ε, *params)`` ``(...)`` per point.

    ``ψ`` is differentiated as a function of the symmetric part of its argument, so that
    ``σ`` is symmetric and ``C`` has the minor symmetries (``ψ = λ/2 (tr ε)² + μ ε:ε`` gives
    ``C_ijkl = λ δ_ij δ_kl + μ (δ_ik δ_jl + δ_il δ_jk)``, Hooke's law).
    """
    def of_symmetric(eps, *values):
        return psi(0.5 * (eps + swap(eps)), *values)

    return (pointwise_grad(of_symmetric, strain, *params),
            pointwise_hessian(of_symmetric, strain, *params, event_ndim=2))


# ------------------------------------------------------------------ checks
def check_finite_constants(*constants) -> None:
    """Refuse constants that are not finite numbers (the check of a law that names none)."""
    for value in constants:
        if not np.all(np.isfinite(np.asarray(getval(value), dtype=float))):
            raise ValueError("a law's constants must be finite numbers")


def _check_gradient(H) -> None:
    shape = np.shape(H)
    if len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] not in (2, 3):
        raise ValueError(f"displacement gradients must have shape (..., d, d) with d = 2 "
                         f"(plane strain) or 3; got {shape}")


def _checked_values(name: str, what: str, values, H, per_point_ndim: int):
    """``values`` if every point's entries are finite; else the first failing point named."""
    plain = np.asarray(getval(values), dtype=float)
    bad = ~np.isfinite(plain)
    if not bad.any():
        return values
    bad = bad.reshape(plain.shape[:plain.ndim - per_point_ndim] + (-1,)).any(axis=-1)
    point = tuple(int(i) for i in np.argwhere(bad)[0])
    H_point = np.asarray(getval(H), dtype=float)[point]
    raise ValueError(f"hyperelastic law {name!r}: {what} is not finite at quadrature point "
                     f"{point} (the first of {int(bad.sum())}), where H = "
                     f"{np.array2string(H_point, precision=6).replace(chr(10), '')}; is the "
                     "energy differentiable there (abs, sqrt at 0; log of J ≤ 0)?")


# ------------------------------------------------------------------ the law
@dataclass(frozen=True)
class HyperelasticLaw:
    """One finite-strain law: its functions of ``(H, *constants)`` and the constants' names.

    The public methods check their inputs, then call the law's functions: ``H``
    ``(..., d, d)`` (d = 2: plane strain, or 3), each constant broadcastable to
    ``H.shape[:-2]`` (per cell ``(n_cells, 1)`` against points ``(n_cells, n_qp)``).
    Make one with :meth:`from_energy`.
    """

    name: str
    #: the form of ``W`` and its source
    description: str
    energy_of: Callable
    first_piola_of: Callable
    tangent_of: Callable
    #: ``P_zz`` ``(...)`` of a 2D (plane strain) ``H``
    out_of_plane_of: Callable
    constants: tuple[str, ...] = ("lam", "mu")
    #: refuses constants outside the law's range (``ValueError``)
    check_constants_of: Callable = check_finite_constants

    @classmethod
    def from_energy(cls, name: str, description: str, energy: Callable,
                    constants: tuple[str, ...] = ("lam", "mu"), *,
                    first_piola: Callable | None = None, tangent: Callable | None = None,
                    out_of_plane: Callable | None = None,
                    check_constants: Callable = check_finite_constants,
                    check_points: bool = True,
                    example_constants: tuple | None = None) -> HyperelasticLaw:
        """The law of the stored energy density ``W = energy(H, *constants)`` ``(...)``.

        Parameters
        ----------
        name, description : str
            The law's name (its registry key) and the form of ``W`` with its source.
        energy : callable
            ``energy(H, *constants) -> (...)`` per point, ``H = F − I`` ``(..., d, d)``,
            in the traced numpy subset (so that ``P``, ``A`` and the adjoint derive).
        constants : tuple of str
            The names of the constants, in ``energy``'s order.
        first_piola, tangent, out_of_plane : callable, optional
            Hand-written ``P`` ``(..., d, d)`` (traced), ``A`` ``(..., d, d, d, d)`` (plain)
            and plane-strain ``P_zz`` ``(...)`` (traced) of ``(H, *constants)``, used
            instead of the derived ones (and checked like them with ``check_points``).
        check_constants : callable
            ``check_constants(*constants)`` raises ``ValueError`` outside the law's range.
        check_points : bool
            A user's energy (True): the rotation test now, and the shape of ``W`` and the
            finiteness of ``W``, ``P``, ``A`` at every evaluation. The built-in laws
            (whose tests check them) pass False.
        example_constants : tuple, optional
            The constants of the rotation test (default: 1.0 each).

        Raises
        ------
        ValueError
            ``W`` not objective, of the wrong shape, or not finite at the test points.
        """
        def energy_of(H, *values):
            if not check_points:
                return energy(H, *values)
            with np.errstate(all="ignore"):  # a non-finite value is refused below, named
                W = energy(H, *values)
            if np.shape(W) != np.shape(H)[:-2]:
                raise ValueError(f"hyperelastic law {name!r}: the energy must give one value "
                                 f"per point, shape {np.shape(H)[:-2]}; got {np.shape(W)}")
            _checked_values(name, "the energy W", W, H, 0)
            return W

        def stress(H, *values):
            return (first_piola or partial(pointwise_grad, energy_of))(H, *values)

        def stiffness(H, *values):
            if tangent:
                return tangent(H, *values)
            return pointwise_hessian(energy_of, H, *values, event_ndim=2)

        def first_piola_of(H, *values):
            if not check_points:
                return stress(H, *values)
            with np.errstate(all="ignore"):
                P = stress(H, *values)
            return _checked_values(name, "the stress P", P, H, 2)

        def tangent_of(H, *values):
            if not check_points:
                return stiffness(H, *values)
            with np.errstate(all="ignore"):
                A = stiffness(H, *values)
            return _checked_values(name, "the tangent A", A, H, 4)

        def out_of_plane_of(H, *values):
            if out_of_plane is not None:
                return out_of_plane(H, *values)
            return pointwise_grad(energy_of, embedded(H), *values)[..., 2, 2]

        law = cls(name, description, energy_of, first_piola_of, tangent_of, out_of_plane_of,
                  tuple(constants), check_constants)
        if check_points:
            law._check_objectivity(example_constants or (1.0,) * len(constants))
        return law

    @classmethod
    def from_invariants(cls, name: str, description: str, energy: Callable,
                        constants: tuple[str, ...] = ("lam", "mu"), *,
                        check_constants: Callable = check_finite_constants,
                        check_points: bool = True,
                        example_constants: tuple | None = None) -> HyperelasticLaw:
        """The isotropic law of ``W = energy(I₁, I₂, J, *constants)`` ``(...)``, a function
        of the invariants of ``C = FᵀF`` (:func:`~fesens.physics.kinematics.
        principal_invariants`, each ``(...)``; plane strain with ``C_zz = 1``).

        :mod:`fesens.ad` derives only ``∂W/∂I_a`` and ``∂²W/∂I_a∂I_b`` (3 numbers per
        point); ``P``, ``A`` and ``P_zz`` follow from the closed-form derivatives of the
        invariants (:mod:`fesens.physics.kinematics`), several times faster than
        differentiating ``W(H)`` (:meth:`from_energy`) and equal to it to round-off. The
        law is objective by construction. Parameters as for :meth:`from_energy`.
        """
        def energy_of(H, *values):
            return energy(*principal_invariants(H), *values)

        return cls.from_energy(
            name, description, energy_of, constants,
            first_piola=partial(invariant_first_piola, energy),
            tangent=partial(invariant_tangent, energy),
            out_of_plane=partial(invariant_out_of_plane, energy),
            check_constants=check_constants, check_points=check_points,
            example_constants=example_constants)

    def _check_objectivity(self, constants: tuple) -> None:
        """Refuse ``W(QF) ≠ W(F)`` at 3 random rotations of 4 random 3D deformations."""
        rng = np.random.default_rng(0)
        H = 0.2 * rng.standard_normal((4, 3, 3))
        Q, _ = np.linalg.qr(rng.standard_normal((3, 1, 3, 3)))
        Q = Q * np.sign(np.linalg.det(Q))[..., None, None]  # proper rotations
        W = np.asarray(self.energy_of(np.broadcast_to(H, (3, 4, 3, 3)), *constants))
        W_rotated = np.asarray(self.energy_of(np.matmul(Q, deformation_gradient(H))
                                              - np.eye(3), *constants))
        if not np.allclose(W_rotated, W, rtol=1e-9, atol=1e-12 * np.max(np.abs(W))):
            raise ValueError(f"hyperelastic law {self.name!r} is not objective: "
                             f"W(QF) ≠ W(F) for a rotation Q (up to "
                             f"{np.max(np.abs(W_rotated - W)):.3g}); write W of C = FᵀF")

    def _checked(self, H, constants: tuple) -> None:
        _check_gradient(H)
        if len(constants) != len(self.constants):
            raise TypeError(f"hyperelastic law {self.name!r} takes the constants "
                            f"{self.constants}; got {len(constants)} values")
        self.check_constants_of(*constants)
        try:
            np.broadcast_shapes(*(np.shape(c) for c in constants), np.shape(H)[:-2])
        except ValueError:
            shapes = ", ".join(f"{np.shape(c)} ({n})" for c, n in zip(constants,
                                                                     self.constants,
                                                                     strict=True))
            raise ValueError(f"the constants' shapes {shapes} do not broadcast to the points' "
                             f"shape {np.shape(H)[:-2]}; give per-cell constants as "
                             "(n_cells, 1)") from None

    def energy(self, H, *constants):
        """Stored energy density ``W`` ``(...)`` per unit reference volume (traced)."""
        self._checked(H, constants)
        return self.energy_of(H, *constants)

    def first_piola(self, H, *constants):
        """First Piola–Kirchhoff stress ``P = ∂W/∂F`` ``(..., d, d)`` (traced)."""
        self._checked(H, constants)
        return self.first_piola_of(H, *constants)

    def tangent(self, H, *constants) -> np.ndarray:
        """``A_iJkL = ∂P_iJ/∂F_kL`` ``(..., d, d, d, d)`` (plain numpy)."""
        self._checked(H, constants)
        return self.tangent_of(H, *constants)

    def cauchy(self, H, *constants) -> tuple:
        """Cauchy stress ``σ = J⁻¹ P Fᵀ`` ``(..., d, d)`` and, in 2D, ``σ_zz`` ``(...)``.

        Returns ``(σ, σ_zz)``; ``σ_zz`` is None in 3D. Traced.
        """
        self._checked(H, constants)
        J = jacobian(H)
        P = self.first_piola_of(H, *constants)
        sigma = np.matmul(P, swap(deformation_gradient(H))) / per_point(J)
        if np.shape(H)[-1] == 3:
            return sigma, None
        return sigma, self.out_of_plane_of(H, *constants) / J

    def von_mises(self, H, *constants):
        """von Mises stress ``(...)`` of the Cauchy stress (with ``σ_zz`` in plane strain)."""
        return von_mises(*self.cauchy(H, *constants))
