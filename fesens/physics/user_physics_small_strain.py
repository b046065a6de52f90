"""A displacement model from a user's small-strain energy ``ψ(ε; params)``.

:func:`small_strain_physics` makes the vector energy physics of
:mod:`fesens.physics.user_physics` whose energy is ``ψ(sym ∇u)``: the residual by one
reverse pass, the tangent ``C = ∂²ψ/∂ε²`` by
:func:`~fesens.physics.energy_law.small_strain_response` (``dim²`` Hessian sweeps per
point instead of ``(dim (dim + 1))²``). In 2D ``ε`` is the in-plane strain (plane strain).

>>> import numpy as np
>>> from fesens.physics.user_physics_small_strain import small_strain_physics
>>> def hooke(eps, lam=1.0, mu=1.0):
...     tr = np.trace(eps, axis1=-2, axis2=-1)
...     return lam / 2 * tr ** 2 + mu * np.sum(eps * eps, axis=(-2, -1))
>>> small_strain_physics(hooke).parameter_names()
('lam', 'mu', 'scale')
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.physics.energy_law import small_strain_response
from fesens.physics.user_physics import EnergyPhysics, user_physics_class


class SmallStrainPhysics(EnergyPhysics):
    """A displacement field from a small-strain energy ``ψ(ε, **params)``, ``ε = sym ∇u``
    ``(n_cells, n_qp, dim, dim)``: ``r1 = σ = ∂ψ/∂ε``, ``∂r1/∂g = C = ∂²ψ/∂ε²``, ``r0 =
    0``."""

    components = "dim"

    def _density(self, z, values: dict):
        g = z[..., 1:]
        return type(self).function(0.5 * (g + np.swapaxes(g, -1, -2)), **values)

    def integrand_tangent(self, z, x, fields) -> np.ndarray:
        """``C`` in the gradient block of ``∂r/∂z`` (plain); the rest is zero."""
        z = np.asarray(getval(z), dtype=float)
        plain = tuple(np.asarray(getval(v)) for v in self._values(fields))
        with np.errstate(all="ignore"):
            _, C = small_strain_response(
                lambda eps, *values: self._packed_energy(_with_gradient(z, eps), *values),
                z[..., 1:], *plain)
        J = np.zeros((*z.shape, *z.shape[2:]))
        J[:, :, :, 1:, :, 1:] = C
        return self.checked_value(J, J.shape, z, "the second derivative of psi")


def small_strain_physics(psi: Callable, *, name: str | None = None
                         ) -> type[SmallStrainPhysics]:
    """A displacement model from a small-strain energy ``ψ(ε, **params) -> (n_cells,
    n_qp)``, ``ε`` ``(n_cells, n_qp, dim, dim)`` symmetric (in 2D the in-plane strain:
    plane strain), e.g. ``λ/2 tr(ε)² + μ ε:ε``.

    Parameters
    ----------
    psi : callable
        ``ψ(eps, **params)``: the strain, then the parameters as keywords with numeric
        defaults (per cell ``(n_cells, 1)`` inside); traced numpy, twice differentiable.
    name : str, optional
        The physics' name in messages (default: the function's).

    Returns
    -------
    type
        A :class:`SmallStrainPhysics` subclass: ``Physics(mesh, **values)``, whose
        ``u`` is the displacement (``fix(..., components=...)``, surface and volume loads).
    """
    return user_physics_class(SmallStrainPhysics, psi, name, 1, "dim")


def _with_gradient(z: np.ndarray, g):
    """The packed state ``z`` with its gradient block replaced by ``g`` (traced)."""
    return np.concatenate([z[..., :1], g], axis=-1)
