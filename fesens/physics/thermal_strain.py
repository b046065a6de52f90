"""Thermal strains of linear elasticity: one-way thermo-elastic coupling.

A temperature field ``T`` (nodal, ``(n_points,)``) expands an isotropic material by the
initial strain ``ε_th = α ΔT I``, ``ΔT = T − T_ref`` (Zienkiewicz, Taylor & Zhu, *The Finite
Element Method: Its Basis and Fundamentals*, 7th ed., §6.2.3). Then

* stress ``σ = D (ε − ε_th) = λ tr ε I + 2μ ε − β α ΔT I`` with ``β = 3λ + 2μ = E/(1−2ν)``
  (3D, plane strain) or ``β = 2λ* + 2μ = E/(1−ν)`` (plane stress, ``λ*`` its Lamé
  parameter);
* load ``f = ∫ Bᵀ D ε_th dΩ``, i.e. ``f_(a,i) = ∫ ∂_i N_a β α ΔT dΩ`` (times the density
  scale ``s`` and the thickness ``t``, like the stiffness).

Everything here is written in the traced numpy subset: ``α`` (per cell), the temperature
(per node), ``E``, ``ν``, the density scale and the node coordinates are differentiable.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from fesens.ad.numpy_wrapper import getval, untake
from fesens.errors import NonFiniteError, read_failure

#: A temperature field: a number (uniform), nodal values ``(n_points,)``, a function of the
#: coordinates ``f(points (n, dim)) -> (n,)``, a solution with a ``temperature``, or the path
#: of a file of nodal values (``.npy``, or text: ``.csv``, ``.txt``).
TemperatureSpec = float | np.ndarray | Callable[[np.ndarray], np.ndarray] | object


def nodal_temperature(spec: TemperatureSpec, points: np.ndarray) -> np.ndarray:
    """Nodal temperatures ``(n_points,)`` of a :data:`TemperatureSpec` at ``points``.

    Raises
    ------
    ValueError
        Not one value per node.
    NonFiniteError
        NaN or infinity (the first bad node is named).
    """
    if hasattr(spec, "temperature"):
        spec = np.asarray(getval(spec.temperature), dtype=float)
    elif hasattr(spec, "field"):
        raise ValueError(f"a {type(spec).__name__} has no temperature field; give a heat "
                         "solution, nodal values, a number, a function or a file")
    if isinstance(spec, str | Path):
        spec = _read_temperature(Path(spec))
    values = spec(points) if callable(spec) else spec
    values = np.asarray(values, dtype=float)
    if values.ndim == 0:
        values = np.full(points.shape[0], float(values))
    check_temperature(values, points.shape[0])
    return values


def _read_temperature(path: Path) -> np.ndarray:
    """Nodal temperatures from a ``.npy`` file or a text file (whitespace or comma
    separated, ``#`` comments)."""
    try:
        if path.suffix == ".npy":
            return np.ravel(np.load(path))
        return np.ravel(np.loadtxt(path, delimiter="," if path.suffix == ".csv" else None))
    except OSError as exc:
        raise ValueError(f"cannot read the temperature file {path}: {read_failure(exc)}"
                         ) from None
    except ValueError as exc:
        # numpy's message quotes the text it could not parse: never echo a file's content
        raise ValueError(
            f"the temperature file {path} is not one temperature per node: expected "
            + ("a .npy array of numbers" if path.suffix == ".npy" else
               "numbers (whitespace or comma separated, # comments)")
            + (f" ({read_failure(exc)})" if isinstance(exc, UnicodeDecodeError) else "")
        ) from None


def check_temperature(values, n_points: int) -> None:
    """Raise unless ``values`` (raw or traced) is one finite temperature per node."""
    raw = np.asarray(getval(values), dtype=float)
    if raw.shape != (n_points,):
        raise ValueError(f"the temperature field must have one value per node ({n_points},), "
                         f"got shape {raw.shape}")
    if not np.all(np.isfinite(raw)):
        node = int(np.flatnonzero(~np.isfinite(raw))[0])
        raise NonFiniteError(f"the temperature field is NaN or infinite at node {node}")


def expansion_modulus(lam, mu, plane: str | None):
    """``β`` with ``σ_th = β α ΔT I``: ``2λ + 2μ`` in plane stress (``λ`` there is ``λ*``),
    else ``3λ + 2μ``."""
    return (2.0 if plane == "stress" else 3.0) * lam + 2.0 * mu


def thermal_stress_at_quadrature(model, geometry, parameters: dict):
    """``β α ΔT`` at the quadrature points of ``geometry``, ``(n_cells, n_qp)``, or None
    when the model has no temperature field.

    ``parameters``: the solve's (``E``, ``nu``, ``alpha``, ``temperature`` override the
    model's values; traced values stay traced).
    """
    temperature = parameters.get("temperature")
    if temperature is None:
        temperature = model.temperature
    if temperature is None:
        return None
    check_temperature(temperature, model.mesh.n_points)
    alpha = parameters.get("alpha")
    alpha = model.alpha if alpha is None else model.checked("alpha", alpha)
    lam, mu = model.lame(parameters.get("E"), parameters.get("nu"))
    beta = expansion_modulus(lam, mu, model.plane) * alpha * np.ones(model.mesh.n_cells)
    delta = temperature - model.reference_temperature
    at_points = np.einsum("qa,ea->eq", geometry.N, delta[model.mesh.cells])
    return beta[:, None] * at_points


def cell_mean(geometry, values):
    """Volume average over each cell of values at the quadrature points ``(n_cells, n_qp)``
    → ``(n_cells,)``."""
    dx = geometry.dx * np.ones(np.shape(values))
    return np.sum(dx * values, axis=1) / np.sum(dx, axis=1)


def thermal_load_vector(model, parameters: dict, points=None):
    """``f = ∫ Bᵀ D ε_th dΩ`` (times ``s t``), ``(n_dofs,)``, or None without temperature."""
    geometry = model.geometry(points)
    stress = thermal_stress_at_quadrature(model, geometry, parameters)
    if stress is None:
        return None
    factor = model.scaled_thickness(parameters.get("scale")) * np.ones(model.mesh.n_cells)
    weighted = geometry.dx * stress * factor[:, None]
    if np.shape(geometry.dNdx)[0] == 1:
        nodal = np.einsum("eq,qai->eai", weighted, geometry.dNdx[0])
    else:
        nodal = np.einsum("eq,eqai->eai", weighted, geometry.dNdx)
    dofs = model.dofmap.cell_dofs
    return untake(np.ravel(nodal), dofs.ravel(), (model.dofmap.n_dofs,))


def plane_stress_zz_strain(solution, mean: bool):
    """The thermal part ``(1+ν)/(1−ν) α ΔT = β α ΔT / (2μ)`` of ``ε_zz`` in plane stress:
    cell means ``(n_cells,)`` or at the quadrature points ``(n_cells, n_qp)`` (plain
    arrays), or 0 without temperature."""
    values = solution._thermal(mean)
    if values is None:
        return 0.0
    mu = np.broadcast_to(np.asarray(getval(solution._lame()[1]), dtype=float),
                         (solution.model.mesh.n_cells,))
    values = np.asarray(getval(values))
    return values / (2.0 * mu).reshape(-1, *[1] * (values.ndim - 1))
