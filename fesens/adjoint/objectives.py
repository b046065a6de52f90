"""Objectives and constraints: scalar functions of a traced :class:`State`.

Each is written in the traced numpy subset, so :func:`fesens.ad.grad` differentiates it
together with the solve that produced the state. With several load cases
(``state.u`` of shape ``(n_dofs, n_cases)``) the sums run over all cases.
"""

from __future__ import annotations

import numpy as np

from fesens.ad.numpy_wrapper import getval, stop_gradient
from fesens.adjoint.problem import State
from fesens.fem.geometry import cell_geometry
from fesens.fem.materials import lame_parameters
from fesens.mesh.mesh import Mesh


def compliance(state: State):
    """``C = fᵀ u`` (external work; structural or thermal compliance)."""
    return np.sum(state.f * state.u)


#: Thermal compliance ``fᵀT`` is the same formula on a heat-conduction state.
thermal_compliance = compliance


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
    """The field component at the node nearest to ``point`` (e.g. a tip deflection)."""
    node = state.model.mesh.nearest_node(point)
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


def volume(mesh: Mesh, density, *, fraction: bool = False):
    """``V(x) = Σ_e x_e |Ω_e|`` (or the fraction ``V / Σ |Ω_e|``)."""
    volumes = _cell_volumes(mesh)
    total = np.sum(density * volumes)
    return total / volumes.sum() if fraction else total


def misfit(state: State, nodes, measured, component: int | None = None, weights=None):
    """Least-squares misfit ``½ Σ w_i (u_i − m_i)²`` at ``nodes`` (one component)."""
    dofs = _dofs(state, np.asarray(nodes), component)
    residual = state.u[dofs] - np.asarray(measured, dtype=float)
    weighted = residual * residual if weights is None else np.asarray(weights) * residual**2
    return 0.5 * np.sum(weighted)


# ------------------------------------------------------------------ stresses
def von_mises_squared(state: State, stress_scale=None):
    """``σ_vm²`` per cell from the cell-averaged strain, ``(n_cells,)``.

    ``σ = s (λ tr ε I + 2 μ ε)``; ``s`` is ``stress_scale`` (e.g. a relaxed ``x^q`` in
    stress-constrained topology optimization) or, by default, the density scale of the
    solve. Plane stress has ``σ_zz = 0``, plane strain ``σ_zz = s λ tr ε``, and
    ``σ_vm² = ½[(σxx−σyy)² + (σyy−σzz)² + (σzz−σxx)²] + 3(σxy² + σyz² + σzx²)``.
    Working with the square keeps aggregates differentiable where the stress vanishes.
    """
    model = state.model
    if np.ndim(getval(state.u)) != 1:
        raise ValueError("stress objectives take a single load case")
    mesh = model.mesh
    dim = mesh.dim
    params = state.parameters
    lam, mu = lame_parameters(params.get("E", model.E), params.get("nu", model.nu),
                              model.plane)
    scale = params.get("scale", 1.0) if stress_scale is None else stress_scale
    gbar = _cell_average_gradients(mesh)
    u_cells = np.reshape(state.u[model.dofmap.cell_dofs], (mesh.n_cells, -1, dim))
    if gbar.shape[0] == 1:
        grad_u = np.einsum("ak,eac->eck", gbar[0], u_cells)
    else:
        grad_u = np.einsum("eak,eac->eck", gbar, u_cells)
    eps = [[0.5 * (grad_u[:, i, j] + grad_u[:, j, i]) for j in range(dim)] for i in range(dim)]
    trace = eps[0][0] + eps[1][1] + (eps[2][2] if dim == 3 else 0.0)
    lam_s, mu2_s = scale * lam, 2.0 * scale * mu
    s = [[mu2_s * eps[i][j] + (lam_s * trace if i == j else 0.0) for j in range(dim)]
         for i in range(dim)]
    if dim == 2:
        szz = lam_s * trace if model.plane == "strain" else 0.0
        normal = (s[0][0] - s[1][1]) ** 2 + (s[1][1] - szz) ** 2 + (szz - s[0][0]) ** 2
        return 0.5 * normal + 3.0 * s[0][1] ** 2
    normal = (s[0][0] - s[1][1]) ** 2 + (s[1][1] - s[2][2]) ** 2 + (s[2][2] - s[0][0]) ** 2
    return 0.5 * normal + 3.0 * (s[0][1] ** 2 + s[1][2] ** 2 + s[0][2] ** 2)


def stress_pnorm(state: State, p: float = 8.0, stress_scale=None, cells=None):
    """p-norm aggregate ``(Σ_e σ_vm,e^p)^(1/p)`` (≥ max σ_vm; → max as p → ∞)."""
    vm2 = von_mises_squared(state, stress_scale)
    if cells is not None:
        vm2 = vm2[state.model.mesh.cell_ids(cells)]
    return np.sum(vm2 ** (0.5 * p)) ** (1.0 / p)


def stress_ks(state: State, rho: float = 50.0, stress_scale=None, cells=None,
              reference: float = 1.0):
    """Kreisselmeier–Steinhauser aggregate of ``σ_vm / reference``:
    ``m + (1/ρ) log Σ_e exp(ρ (σ_e − m))`` with the shift ``m = max σ_e`` (exact: the
    aggregate does not depend on ``m``). Returned in stress units.
    """
    vm2 = von_mises_squared(state, stress_scale)
    if cells is not None:
        vm2 = vm2[state.model.mesh.cell_ids(cells)]
    vm = np.sqrt(vm2 + 1e-300) / reference
    shift = stop_gradient(np.max(vm))
    return reference * (shift + np.log(np.sum(np.exp(rho * (vm - shift)))) / rho)


def _averaged_geometry(mesh: Mesh) -> tuple[np.ndarray, np.ndarray]:
    """Volume-averaged ``∂N_a/∂x_k`` per cell ``(n_geom, n_nodes, dim)`` and cell volumes
    ``(n_cells,)``, computed once per mesh (kept in ``mesh.derived``, which
    ``Mesh.validate`` clears)."""
    cached = mesh.derived.get("averaged_geometry")
    if cached is None:
        geometry = cell_geometry(mesh)
        weights = geometry.dx / geometry.dx.sum(axis=1, keepdims=True)
        gbar = np.einsum("eq,eqak->eak", weights, geometry.dNdx)
        volumes = np.broadcast_to(geometry.volumes, (mesh.n_cells,)).copy()
        cached = mesh.derived["averaged_geometry"] = (gbar, volumes)
    return cached


def _cell_average_gradients(mesh: Mesh) -> np.ndarray:
    return _averaged_geometry(mesh)[0]


def _cell_volumes(mesh: Mesh) -> np.ndarray:
    return _averaged_geometry(mesh)[1]
