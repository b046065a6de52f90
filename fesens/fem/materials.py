"""Isotropic material laws: Lamé parameters from Young's modulus and Poisson's ratio."""

from __future__ import annotations

import numpy as np

#: Allowed values of the 2D kinematic assumption (None: full 3D).
PLANE_ASSUMPTIONS = ("stress", "strain")


def check_elastic_constants(E: np.ndarray, nu: np.ndarray) -> None:
    """Raise ValueError unless ``E > 0`` and ``-1 < nu < 0.5`` everywhere (finite)."""
    E = np.asarray(E, dtype=float)
    nu = np.asarray(nu, dtype=float)
    if not (np.all(np.isfinite(E)) and np.all(np.isfinite(nu))):
        from fesens.errors import NonFiniteError

        raise NonFiniteError("Young's modulus E or Poisson's ratio nu contains NaN or infinity")
    if np.any(E <= 0):
        raise ValueError(f"Young's modulus E must be > 0; got min(E) = {E.min():g}")
    if np.any((nu <= -1) | (nu >= 0.5)):
        bad = nu[(nu <= -1) | (nu >= 0.5)].ravel()[0]
        raise ValueError(f"Poisson's ratio nu must lie in (-1, 0.5); got {bad:g}")


def lame_parameters(E, nu, plane: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Lamé parameters ``(λ, μ)`` such that ``σ = λ tr(ε) I + 2μ ε``.

    ``μ = E / (2(1+ν))``; 3D and plane strain: ``λ = Eν / ((1+ν)(1−2ν))``;
    plane stress (σ_zz = 0 eliminated): ``λ* = Eν / (1−ν²)``.

    Parameters
    ----------
    E, nu : float or numpy.ndarray
        Young's modulus and Poisson's ratio (scalars or per-cell arrays ``(n_cells,)``).
        Only arithmetic is applied, so traced values (:mod:`fesens.ad`) work too.
    plane : {"stress", "strain"} or None
    """
    mu = E / (2.0 * (1.0 + nu))
    if plane == "stress":
        lam = E * nu / (1.0 - nu**2)
    else:
        lam = E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))
    return lam, mu


def lame_weights(nu: np.ndarray, plane: str | None = None) -> tuple[float, float] | None:
    """``(λ, μ)`` at ``E = 1`` when ``nu`` holds one value (in every cell), else None.

    λ and μ are linear in ``E``: with the same ``ν`` in every cell, ``(λ_e, μ_e) = E_e w``,
    so the stiffness ``Σ_e s_e (λ_e Kλ_e + μ_e Kμ_e)`` has the single component
    ``w_λ Kλ + w_μ Kμ`` with coefficients ``s_e E_e`` (assembled with one gather).

    Parameters
    ----------
    nu : numpy.ndarray
        Valid Poisson's ratios (see :func:`check_elastic_constants`), e.g. per cell.
    plane : {"stress", "strain"} or None
    """
    if nu.size == 0 or np.ptp(nu) != 0:
        return None
    lam, mu = lame_parameters(1.0, float(nu.flat[0]), plane)
    return float(lam), float(mu)
