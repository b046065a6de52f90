"""A vector-field physics written as a user's energy or weak form: linear elasticity three
ways (energy of ∇u, small-strain energy of ε, weak form r1 = σ) against the built-in
elasticity, a nonlinear small-strain law against its closed-form 1D response, Taylor tests
in every parameter kind, and bad input named."""

import numpy as np
import pytest

from fesens.ad import jvp
from fesens.ad.checks import taylor_test
from fesens.errors import NonFiniteError
from fesens.mesh.generators import box, rectangle
from fesens.physics.elasticity import Elasticity
from fesens.physics.user_physics import energy_physics, weak_form_physics
from fesens.physics.user_physics_small_strain import small_strain_physics

E, NU = 2.0, 0.3
LAM, MU = E * NU / ((1 + NU) * (1 - 2 * NU)), E / (2 * (1 + NU))


def strain(g):
    return 0.5 * (g + np.swapaxes(g, -1, -2))


def trace(a):
    return np.trace(a, axis1=-2, axis2=-1)


def hooke_energy(g, u, lam=LAM, mu=MU):
    """ψ(∇u) = λ/2 tr(ε)² + μ ε:ε."""
    eps = strain(g)
    return lam / 2 * trace(eps) ** 2 + mu * np.sum(eps * eps, axis=(-2, -1))


def hooke_strain_energy(eps, lam=LAM, mu=MU):
    """ψ(ε) = λ/2 tr(ε)² + μ ε:ε."""
    return lam / 2 * trace(eps) ** 2 + mu * np.sum(eps * eps, axis=(-2, -1))


def hooke_weak_form(u, g, x, lam=LAM, mu=MU):
    """r1 = σ = λ tr(ε) I + 2μ ε, no r0."""
    eps = strain(g)
    eye = np.eye(np.shape(g)[-1])
    return 0.0 * u, lam[..., None, None] * trace(eps)[..., None, None] * eye + 2 * mu[
        ..., None, None] * eps


def hardening(eps, lam=LAM, mu=MU, c=50.0):
    """Hooke's energy plus c/4 (ε:ε)²: σ = λ tr ε I + 2μ ε + c (ε:ε) ε (a deformation-theory
    hardening law)."""
    ee = np.sum(eps * eps, axis=(-2, -1))
    return lam / 2 * trace(eps) ** 2 + mu * ee + c / 4 * ee ** 2


def swelling_flow(u, g, x, mu=MU, beta=1.0, a=0.5):
    """A non-symmetric, nonlinear weak form: r0 = a (1, 0.5)·∇u_c (advection of each
    component), r1 = μ (1 + β |u|²) (∇u + ∇uᵀ)."""
    b = np.array([1.0, 0.5])
    r0 = a[..., None] * np.sum(g * b, axis=-1)
    stiffness = mu * (1 + beta * np.sum(u * u, axis=-1))
    return r0, stiffness[..., None, None] * (g + np.swapaxes(g, -1, -2))


HookeEnergy = energy_physics(hooke_energy, components="dim")
HookeStrain = small_strain_physics(hooke_strain_energy)
HookeWeak = weak_form_physics(hooke_weak_form, components="dim")
Hardening = small_strain_physics(hardening)
SwellingFlow = weak_form_physics(swelling_flow, components=2)

MESHES = {
    "quad4": lambda: rectangle(4, 2, 2.0, 1.0),
    "hex8": lambda: box(2, 2, 2),
    "tet4": lambda: box(2, 1, 1, cell_type="tet4"),
}


def loaded(model):
    model.fix("left")
    dim = model.mesh.dim
    model.surface_load("right", value=(0.3, -0.2, 0.1)[:dim])
    return model


@pytest.mark.parametrize("cell", sorted(MESHES))
@pytest.mark.parametrize("physics", [HookeEnergy, HookeStrain, HookeWeak])
def test_linear_elasticity_from_a_user_function_is_the_builtin_one(physics, cell):
    mesh = MESHES[cell]()
    builtin = loaded(Elasticity(mesh, E, NU, plane="strain" if mesh.dim == 2 else None))
    derived = loaded(physics(mesh))
    K_builtin = builtin.stiffness().tocsr()
    u = np.random.default_rng(0).standard_normal(derived.dofmap.n_dofs)
    K = derived.tangent(u, derived.material_fields()).tocsr()
    assert abs(K - K_builtin).max() < 1e-12 * abs(K_builtin).max()
    expected = np.asarray(builtin.solve().field)
    np.testing.assert_allclose(derived.solve().field, expected, rtol=0,
                               atol=1e-12 * np.abs(expected).max())


def test_a_hardening_small_strain_law_gives_its_closed_form_uniaxial_strain_response():
    # uniaxial strain (u_y = 0 everywhere): σ_xx = (λ + 2μ) e + c e³ = t, a homogeneous
    # state that quad4 represents exactly
    c, t, length = 50.0, 1.5, 2.0
    model = Hardening(rectangle(4, 2, length, 1.0), c=c)
    model.fix("left", components="x")
    model.fix(lambda x: np.ones(len(x), bool), components="y")
    model.surface_load("right", value=(t, 0.0))
    e = np.roots([c, 0.0, LAM + 2 * MU, -t])
    e = e[np.isreal(e)].real[0]
    ux = np.asarray(model.solve().field)[:, 0]
    np.testing.assert_allclose(ux, e * model.mesh.points[:, 0], rtol=1e-10, atol=1e-13)
    assert e < 0.75 * t / (LAM + 2 * MU)  # the hardening term matters


def test_the_small_strain_tangent_is_the_vector_energy_hessian():
    mesh = rectangle(3, 2)
    rng = np.random.default_rng(3)
    c = 50.0 + rng.random(mesh.n_cells)
    via_strain = Hardening(mesh, c=c)

    def of_gradient(g, u, lam=LAM, mu=MU, c=50.0):
        return hardening(strain(g), lam, mu, c)

    via_gradient = energy_physics(of_gradient, components="dim")(mesh, c=c)
    for model in (via_strain, via_gradient):
        model.fix("left")
    u = 0.1 * rng.standard_normal(mesh.n_points * 2)
    K = [m.tangent(u, m.material_fields()).tocsr() for m in (via_strain, via_gradient)]
    assert abs(K[0] - K[1]).max() < 1e-12 * abs(K[1]).max()
    F = [np.asarray(m.internal_forces(u, m.material_fields())) for m in (via_strain,
                                                                         via_gradient)]
    np.testing.assert_allclose(F[0], F[1], rtol=0, atol=1e-13 * np.abs(F[1]).max())


@pytest.mark.parametrize("physics", [Hardening, SwellingFlow])
def test_the_vector_tangent_is_the_derivative_of_the_traced_residual(physics):
    mesh = rectangle(3, 2)
    model = physics(mesh)
    model.fix("left")
    rng = np.random.default_rng(1)
    u, v, w = 0.3 * rng.standard_normal((3, model.dofmap.n_dofs))
    fields = model.material_fields(mu=1.0 + rng.random(mesh.n_cells),
                                   scale=1.0 + rng.random(mesh.n_cells))
    _, dF = jvp(lambda x: model.internal_forces(x, fields), (u,), (v,))
    dF = np.asarray(dF)
    on_free = np.zeros_like(v)
    on_free[model.free_dofs] = v[model.free_dofs]
    _, dF_free = jvp(lambda x: model.internal_forces(x, fields), (u,), (on_free,))
    K = model.tangent(u, fields).tocsr()
    np.testing.assert_allclose(K @ v[model.free_dofs], np.asarray(dF_free)[model.free_dofs],
                               rtol=1e-12, atol=1e-12 * np.abs(dF).max())
    assert (abs(K - K.T).max() < 1e-12 * abs(K).max()) == physics.symmetric_tangent
    cells = model.dofmap.cell_dofs
    nodes = mesh.type_info.n_nodes
    action = model.transposed_tangent(u, fields)(np.reshape(w[cells], (-1, nodes, 2)))
    assert np.sum(np.reshape(action, (len(cells), -1)) * v[cells]) == pytest.approx(
        w @ dF, rel=1e-12)


def objectives(physics):
    """``J = Σ u²`` as a function of each parameter kind, with its point."""
    mesh = rectangle(4, 2, 2.0, 1.0)
    model = physics(mesh)
    model.fix("left", value=lambda x: np.stack([0.02 * x[:, 1], 0 * x[:, 1]], axis=1))
    model.surface_load("right", value=(0.4, -0.3), name="pull")
    rng = np.random.default_rng(2)

    def J(**inputs):
        return np.sum(model.solve(**inputs).field ** 2)

    return {
        "material": (lambda v: J(mu=v), MU * (1.0 + 0.2 * rng.random(mesh.n_cells))),
        "scale": (lambda v: J(scale=v), 1.0 + 0.2 * rng.random(mesh.n_cells)),
        "load": (lambda v: J(loads={"pull": v}), 1.5),
        "dirichlet": (lambda v: J(dirichlet=v), model.prescribed_values()),
        "points": (lambda v: J(points=v), mesh.points.copy()),
    }


@pytest.mark.parametrize("kind", ["material", "scale", "load", "dirichlet", "points"])
@pytest.mark.parametrize("physics", [Hardening, SwellingFlow])
def test_taylor_rate_two_in_every_parameter_kind(physics, kind):
    fun, x0 = objectives(physics)[kind]
    assert taylor_test(fun, x0, verbose=False).rate > 1.9


def test_a_weak_form_whose_r1_has_the_wrong_shape_is_named():
    def scalar_flux(u, g, x):
        return u, g[..., 0, :]

    model = weak_form_physics(scalar_flux, components="dim")(rectangle(2, 1))
    model.fix("left")
    with pytest.raises(ValueError, match=r"physics 'scalar_flux': the weak form's r1 "
                                         r"returned shape \(2, 4, 2\), expected \(2, 4, 2, 2\)"):
        model.solve()


def test_a_nan_in_a_vector_energy_names_the_cell_the_point_and_the_state():
    def log_volume(eps, k=1.0):
        return k * np.log(trace(eps))  # log 0 at the unloaded state

    model = small_strain_physics(log_volume)(rectangle(2, 1))
    model.fix("left")
    with pytest.raises(NonFiniteError, match=r"physics 'log_volume': the energy psi is not "
                                             r"finite at cell 0, quadrature point 0: -inf at "
                                             r"u = \[0\. 0\.\], grad u = \[\[0\. 0\.\] *\[0\. "
                                             r"0\.\]\]"):
        model.solve()


def test_components_must_be_a_positive_integer_or_dim():
    with pytest.raises(ValueError, match="components must be a positive integer or 'dim'"):
        energy_physics(hooke_energy, components=0)
    assert HookeEnergy(rectangle(2, 1)).n_components == 2
    assert SwellingFlow.parameter_names() == ("mu", "beta", "a", "scale")
