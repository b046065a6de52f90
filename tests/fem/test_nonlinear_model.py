"""The interface of NonlinearModel for vector and scalar fields: hand-derived tangents
against differences of the residual, an energy line search, gradients of a vector field."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.ad import taylor_test
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.model.parameters import SCALE, Parameter
from fesens.mesh.generators import box, rectangle
from fesens.objectives import compliance
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction


class StiffeningMembrane(NonlinearModel):
    """A vector field with ``W = μ (|∇u|²/2 + γ |∇u|⁴/4)``: ``P = μ (1 + γ |∇u|²) ∇u``,
    ``∂P_ck/∂∇u_dl = μ (1 + γ |∇u|²) δ_cd δ_kl + 2 μ γ ∇u_ck ∇u_dl`` (symmetric)."""

    name = "stiffening_membrane_test"
    field_name = "displacement"
    parameters = {"mu": Parameter("mu", "modulus", lower=0.0), "scale": SCALE}

    def __init__(self, mesh, mu=1.0, gamma=5.0):
        super().__init__(mesh, mesh.dim)
        self.mu, self.gamma = np.asarray(self.checked("mu", mu)), gamma

    def material_fields(self, mu=None, scale=None) -> dict:
        mu = self.mu if mu is None else self.checked("mu", mu)
        return {"mu": mu if scale is None else mu * self.checked("scale", scale)}

    def _squared(self, grad_q):
        return np.sum(np.sum(grad_q * grad_q, axis=-1), axis=-1)

    def flux(self, u_q, grad_q, fields):
        factor = fields["mu"][:, None] * (1.0 + self.gamma * self._squared(grad_q))
        return factor[:, :, None, None] * grad_q

    def flux_tangent(self, u_q, grad_q, fields):
        n_comp, dim = grad_q.shape[2:]
        mu = fields["mu"][:, None, None, None, None, None]
        identity = np.einsum("cd,kl->ckdl", np.eye(n_comp), np.eye(dim))
        factor = (1.0 + self.gamma * self._squared(grad_q))[:, :, None, None, None, None]
        return (mu * (factor * identity
                      + 2 * self.gamma * np.einsum("eqck,eqdl->eqckdl", grad_q, grad_q)),
                None)

    def energy(self, u_q, grad_q, fields):
        squared = self._squared(grad_q)
        return fields["mu"][:, None] * (squared / 2 + self.gamma * squared ** 2 / 4)


def membrane(mesh):
    model = StiffeningMembrane(mesh, mu=1.0 + np.random.default_rng(3).random(mesh.n_cells))
    model.fix("left")
    model.surface_load("right", [0.3, -0.6, 0.2][:mesh.dim], name="pull")
    return model


def tangent_error(model, u, fields):
    """Largest relative difference of ``K_T v`` from the central difference of ``F_int``."""
    rng = np.random.default_rng(4)
    free = model.free_dofs
    v = np.zeros(model.dofmap.n_dofs)
    v[free] = rng.standard_normal(free.size)
    h = 1e-6
    difference = (model.internal_forces(u + h * v, fields)
                  - model.internal_forces(u - h * v, fields))[free] / (2 * h)
    product = model.tangent(u, fields).tocsr() @ v[free]
    return np.abs(product - difference).max() / np.abs(difference).max()


@pytest.mark.parametrize("mesh", [rectangle(3, 2, 1.0, 0.5, "quad8"),
                                  rectangle(3, 2, 1.0, 0.5, "tri6"),
                                  box(2, 1, 1, 1.0, 0.5, 0.5)],
                         ids=["quad8", "tri6", "hex8"])
def test_vector_tangent_is_the_derivative_of_the_residual(mesh):
    model = membrane(mesh)
    u = 0.1 * np.random.default_rng(5).standard_normal(model.dofmap.n_dofs)
    assert tangent_error(model, u, model.material_fields()) < 1e-7


def test_heat_tangent_is_the_derivative_of_the_residual():
    mesh = rectangle(3, 3, 1.0, 1.0, "tri6")
    model = NonlinearHeatConduction(mesh, conductivity=2.0, beta=0.7,
                                    reference_temperature=1.0)
    model.fix("left", value=1.0)
    u = 1.0 + 0.3 * np.random.default_rng(6).random(model.dofmap.n_dofs)
    assert tangent_error(model, u, model.material_fields()) < 1e-7


def test_energy_line_search_and_residual_line_search_agree():
    model = membrane(rectangle(6, 3, 1.0, 0.5, "quad4"))
    by_energy = model.solve(newton={"line_search": "energy"}, warm_start=False,
                            loads={"pull": 4.0})
    by_residual = model.solve(warm_start=False, loads={"pull": 4.0})
    assert np.allclose(by_energy.u, by_residual.u, rtol=1e-9, atol=1e-12)
    # the symmetric tangent takes the default (Cholesky when available) backend
    assert model.tangent_solver().symmetric == model.solver().symmetric
    # the energy is stationary: F_int = ∂(Σ W dΩ)/∂u
    u = np.asarray(by_energy.u)
    fields = model.material_fields()
    h = 1e-6
    v = np.zeros_like(u)
    v[model.free_dofs] = np.random.default_rng(7).standard_normal(model.free_dofs.size)
    slope = (model.stored_energy(u + h * v, fields) - model.stored_energy(u - h * v, fields))
    assert slope / (2 * h) == pytest.approx(np.dot(model.internal_forces(u, fields), v),
                                            rel=1e-6)


@pytest.mark.parametrize("wrt", ["mu", "points"])
def test_taylor_for_a_vector_field(wrt):
    model = membrane(rectangle(4, 2, 1.0, 0.5, "quad4"))
    x = {"mu": model.mu * 1.1, "points": model.mesh.points * 1.01}[wrt]

    def fun(value):
        return compliance(model.solve(loads={"pull": 3.0}, **{wrt: value}))

    result = taylor_test(fun, x, verbose=False)
    assert result.rate > 1.9, result.table()
