"""Objectives and constraints: scalar functions of a traced :class:`State`.

Each is written in the traced numpy subset, so :func:`fesens.ad.grad` differentiates it
together with the solve that produced the state. With several load cases
(``state.u`` of shape ``(n_dofs, n_cases)``) the sums run over all cases.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import stop_gradient
from fesens.fem.integrals.geometry import cell_geometry
from fesens.fem.model.solution import Solution
from fesens.fem.post.probe import node_at
from fesens.mesh.mesh import Mesh
from fesens.objectives.differentiable import State

#: What ``from fesens.objectives import ...`` offers of this module (the package exports
#: exactly these): a new objective is its function here and its name in this list.
__all__ = [
    "compliance", "displacement_at", "displacement_norm", "mean_displacement",
    "mean_temperature", "mean_value", "misfit", "strain_energy", "stress_ks",
    "stress_pnorm", "thermal_compliance", "value_at", "volume", "von_mises_squared",
]

def compliance(state: State):
    """``C = fᵀ u`` (external work; structural or thermal compliance)."""
    return np.sum(state.f * state.u)


#: Thermal compliance ``fᵀT`` is the same formula on a heat-conduction state.
thermal_compliance = compliance


def strain_energy(state: State):
    """The stored energy ``∫ W dΩ`` of a nonlinear (hyperelastic) state, traced: the
    solution's ``strain_energy()``. (Of a linear elastic state it is half the compliance.)"""
    energy = getattr(state, "strain_energy", None)
    if energy is None:
        raise TypeError(f"the strain energy objective needs a physics with a stored energy; "
                        f"{type(state.model).__name__} ({state.model.name!r}) has none (a "
                        "linear elastic state's is half its compliance)")
    return energy()


def displacement_norm(state: State):
    """``‖u‖₂`` over all dofs (Frobenius norm over load cases)."""
    return np.linalg.norm(state.u)


def _dofs(state: State, nodes: np.ndarray, component: int | None) -> np.ndarray:
    n_comp = state.model.n_components
    if component is None:
        if n_comp != 1:
            raise ValueError("give the displacement component (0, 1 or 2)")
        component = 0
    if not 0 <= component < n_comp:
        raise ValueError(f"component {component} does not exist (0..{n_comp - 1})")
    return np.asarray(nodes) * n_comp + component


def value_at(state: State, point, component: int | None = None):
    """The field component at the node nearest to ``point`` (e.g. a tip deflection); warns
    (:class:`~fesens.fem.post.probe.OffNodeWarning`) with the distance when ``point`` is not on a
    node (for a value between nodes, :meth:`~fesens.fem.model.solution.Solution.probe`)."""
    node = node_at(state.model.mesh, point, "value_at")
    return state.u[_dofs(state, np.array([node]), component)[0]]


def mean_value(state: State, where, component: int | None = None):
    """Mean of a field component over a named node set (or predicate)."""
    dofs = _dofs(state, state.model.mesh.nodes(where), component)
    return np.mean(state.u[dofs])


#: Elasticity names of the two functions above.
displacement_at = value_at
mean_displacement = mean_value
#: Conduction name.
mean_temperature = mean_value


def volume(source, density=1.0, *, fraction: bool = False, points=None):
    """``V(x) = Σ_e x_e |Ω_e|`` (or the fraction ``V / Σ |Ω_e|``).

    Parameters
    ----------
    source : LinearModel, Solution or Mesh
        Where the cell volumes come from: a model keeps them (use it in loops); a
        solution uses the coordinates of its solve; a mesh computes them.
    density : float or array_like
        ``(n_cells,)`` or a scalar (traced allowed).
    fraction : bool
        Divide by the total volume.
    points : array_like, optional
        Node coordinates ``(n_points, dim)`` (traced allowed): the volume is then
        differentiable in them (shape optimization).
    """
    if isinstance(source, Solution):
        points = source.points if points is None else points
        source = source.model
    if isinstance(source, Mesh):
        if points is not None:
            raise TypeError("give a model (not a mesh) to differentiate the volume in points")
        volumes = np.broadcast_to(cell_geometry(source).volumes, (source.n_cells,))
    else:
        volumes = source.cell_volumes(source.checked_points(points))
    total = np.sum(density * volumes)
    return total / np.sum(volumes) if fraction else total


def misfit(state: State, nodes, measured, component: int | None = None, weights=None):
    """Least-squares misfit ``½ Σ w_i (u_i − m_i)²`` at ``nodes`` (one component)."""
    dofs = _dofs(state, np.asarray(nodes), component)
    residual = state.u[dofs] - np.asarray(measured, dtype=float)
    weighted = residual * residual if weights is None else np.asarray(weights) * residual**2
    return 0.5 * np.sum(weighted)


# ------------------------------------------------------------------ stresses
def von_mises_squared(state: State, stress_scale=None):
    """``σ_vm²`` per cell, ``(n_cells,)``, of the physics' cell-mean stress (the solution's
    ``von_mises_squared``: the stress of each cell's volume-averaged strain) — not the
    recovered nodal stress of post-processing (``nodal_stress``, patch recovery), so that
    aggregates stay smooth and differentiable in the design.

    ``stress_scale`` replaces the density scale of the solve (e.g. a relaxed ``x^q`` in
    stress-constrained topology optimization). Needs a physics with stresses.
    """
    recover = getattr(state, "von_mises_squared", None)
    if recover is None:
        raise TypeError(f"stress objectives need a physics with stresses; "
                        f"{type(state.model).__name__} ({state.model.name!r}) has none")
    return recover(stress_scale)


def stress_pnorm(state: State, p: float = 8.0, stress_scale=None, cells=None):
    """p-norm aggregate ``(Σ_e σ_vm,e^p)^(1/p)`` of the cell-mean von Mises stresses
    (:func:`von_mises_squared`; ≥ their max; → max as p → ∞).

    Computed as ``σ_m (Σ_e (σ_e / σ_m)^p)^(1/p)`` with ``σ_m`` the largest stress, held
    constant (exact: the aggregate does not depend on it, so neither does its gradient):
    each ratio is at most 1 and the sum between 1 and the cell count, where ``σ_e^p``
    itself overflows float64 beyond ``σ_e = 10^(308/p)`` (2.03 for ``p = 1000``).
    """
    vm2 = von_mises_squared(state, stress_scale)
    if cells is not None:
        vm2 = vm2[state.model.mesh.cell_ids(cells)]
    top = float(np.max(stop_gradient(vm2)))
    top = top if top > 0.0 else 1.0  # all stresses zero: any positive shift is exact
    return np.sqrt(top) * np.sum((vm2 / top) ** (0.5 * p)) ** (1.0 / p)


def stress_ks(state: State, rho: float = 50.0, stress_scale=None, cells=None,
              reference: float = 1.0):
    """Kreisselmeier–Steinhauser aggregate of the cell-mean ``σ_vm / reference``
    (:func:`von_mises_squared`):
    ``m + (1/ρ) log Σ_e exp(ρ (σ_e − m))`` with the shift ``m = max σ_e`` (exact: the
    aggregate does not depend on ``m``). Returned in stress units.
    """
    vm2 = von_mises_squared(state, stress_scale)
    if cells is not None:
        vm2 = vm2[state.model.mesh.cell_ids(cells)]
    vm = np.sqrt(vm2 + 1e-300) / reference
    shift = stop_gradient(np.max(vm))
    return reference * (shift + np.log(np.sum(np.exp(rho * (vm - shift)))) / rho)
