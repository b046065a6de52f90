"""A physics written as a user's energy or weak form: closed forms at the mesh's order, the
derived tangent against the traced residual, Taylor tests in every parameter kind, bad
input named, and the built-in k(T) conduction as a weak form with its hand tangent as a
checked override."""

import numpy as np
import pytest

from fesens.ad import jvp
from fesens.ad.checks import taylor_test
from fesens.errors import NonFiniteError, SolverError
from fesens.mesh.generators import rectangle
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction, conduction_weak_form
from fesens.physics.user_physics import energy_physics, weak_form_physics

PECLET = 5.0


def stiffening(g, T, c=1.0, Q=4.0):
    """ψ = c (|g|²/2 + |g|⁴/4) − Q T: flux (1 + |g|²) g, a uniform source Q."""
    gg = np.sum(g * g, axis=-1)
    return c * (gg / 2 + gg ** 2 / 4) - Q * T


def advection_diffusion(u, g, x, kappa=1.0, pe=PECLET):
    """κ ∇u · ∇N + (b · ∇u) N with b = (pe, 0)."""
    return pe * g[..., 0], kappa[..., None] * g


Stiffening = energy_physics(stiffening)
AdvectionDiffusion = weak_form_physics(advection_diffusion)


def strip(n):
    """A 1 x 0.1 strip of n x 1 quad4 cells (the 1D problem along x)."""
    return rectangle(n, 1, 1.0, 0.1)


def stiffening_closed_form(x, Q=4.0):
    """``−((1 + T'²) T')' = Q``, ``T(0) = T(1) = 0``: the flux is ``Q (1/2 − x)``, so with
    ``s`` the real root of ``s + s³ = Q |1/2 − x|`` (Cardano) the slope is ``±s`` and
    ``T = [φ(s₀) − φ(s)] / Q``, ``φ(s) = s²/2 + 3 s⁴/4`` (``∫ s dx`` with ``dx = −(1 +
    3s²) ds / Q``), ``s₀ = s(Q/2)``."""
    def root(y):
        d = np.sqrt(y ** 2 / 4 + 1 / 27)
        return np.cbrt(y / 2 + d) + np.cbrt(y / 2 - d)

    def phi(s):
        return s ** 2 / 2 + 3 * s ** 4 / 4

    return (phi(root(Q / 2)) - phi(root(Q * np.abs(0.5 - x)))) / Q


def nodal_error(physics, n, exact, left=0.0, right=0.0):
    mesh = strip(n)
    model = physics(mesh)
    model.fix("left", value=left)
    model.fix("right", value=right)
    solution = model.solve()
    return np.abs(np.asarray(solution.field[:, 0]) - exact(mesh.points[:, 0])).max()


def test_a_user_energy_converges_to_the_closed_form_at_second_order():
    errors = [nodal_error(Stiffening, n, stiffening_closed_form) for n in (16, 32)]
    assert errors[1] < 2e-4  # of a peak 0.3125
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.1)


def test_a_user_weak_form_converges_to_the_advection_diffusion_closed_form():
    def exact(x):
        return np.expm1(PECLET * x) / np.expm1(PECLET)

    errors = [nodal_error(AdvectionDiffusion, n, exact, right=1.0) for n in (16, 32)]
    assert errors[1] < 1e-3
    assert errors[0] / errors[1] == pytest.approx(4.0, rel=0.1)


def test_the_weak_form_takes_lu_and_the_energy_a_symmetric_solver():
    weak, energy = AdvectionDiffusion(strip(4)), Stiffening(strip(4))
    for model in (weak, energy):
        model.fix("left")
    assert not weak.tangent_solver().symmetric
    with pytest.raises(SolverError, match="not symmetric"):
        weak.tangent_solver("cholmod")
    assert energy.tangent_solver("cholmod").symmetric


@pytest.mark.parametrize("physics", [Stiffening, AdvectionDiffusion])
def test_the_derived_tangent_is_the_derivative_of_the_traced_residual(physics):
    mesh = rectangle(3, 2)
    model = physics(mesh)
    model.fix("left")
    rng = np.random.default_rng(1)
    u, v, w = rng.standard_normal((3, model.dofmap.n_dofs))
    name = next(iter(model.defaults))
    fields = model.material_fields(**{name: 1.0 + rng.random(mesh.n_cells)},
                                   scale=1.0 + rng.random(mesh.n_cells))
    _, dF = jvp(lambda x: model.internal_forces(x, fields), (u,), (v,))
    dF = np.asarray(dF)
    free = model.free_dofs
    on_free = np.zeros_like(v)
    on_free[free] = v[free]
    _, dF_free = jvp(lambda x: model.internal_forces(x, fields), (u,), (on_free,))
    K = model.tangent(u, fields).tocsr()
    np.testing.assert_allclose(K @ v[free], np.asarray(dF_free)[free], rtol=1e-12,
                               atol=1e-12 * np.abs(dF).max())
    assert (abs(K - K.T).max() < 1e-12 * abs(K).max()) == physics.symmetric_tangent
    # the transposed action on gathered cell vectors: Σ_e (K_eᵀ w_e) · v_e = w · (dF/du) v
    cells = model.dofmap.cell_dofs
    action = model.transposed_tangent(u, fields)(w[cells][:, :, None])
    assert np.sum(action[:, :, 0] * v[cells]) == pytest.approx(w @ dF, rel=1e-12)


def objectives(physics):
    """``J = Σ T²`` as a function of each parameter kind, with its point."""
    mesh = rectangle(6, 3, 1.0, 0.5)
    model = physics(mesh)
    model.fix("left")
    model.fix("right", value=lambda x: 1.0 + x[:, 1])
    model.volume_load(2.0, name="heat")
    material = next(iter(model.defaults))
    rng = np.random.default_rng(2)

    def J(**inputs):
        return np.sum(model.solve(**inputs).field[:, 0] ** 2)

    return {
        "material": (lambda v: J(**{material: v}), 1.0 + 0.2 * rng.random(mesh.n_cells)),
        "scale": (lambda v: J(scale=v), 1.0 + 0.2 * rng.random(mesh.n_cells)),
        "load": (lambda v: J(loads={"heat": v}), 1.5),
        "dirichlet": (lambda v: J(dirichlet=v), model.prescribed_values()),
        "points": (lambda v: J(points=v), mesh.points.copy()),
    }


@pytest.mark.parametrize("kind", ["material", "scale", "load", "dirichlet", "points"])
@pytest.mark.parametrize("physics", [Stiffening, AdvectionDiffusion])
def test_taylor_rate_two_in_every_parameter_kind(physics, kind):
    fun, x0 = objectives(physics)[kind]
    assert taylor_test(fun, x0, verbose=False).rate > 1.9


def test_a_user_energy_of_the_wrong_shape_is_named():
    def vector_energy(g, T):
        return g * g

    model = energy_physics(vector_energy)(strip(4))
    model.fix("left")
    with pytest.raises(ValueError, match=r"physics 'vector_energy': the energy psi returned "
                                         r"shape \(4, 4, 2\), expected \(4, 4\)"):
        model.solve()


def test_a_nan_from_the_user_names_the_cell_the_point_and_the_state():
    def log_barrier(u, g, x):
        return np.log(x[..., 0] - 0.5) * 0.0 + u, g  # NaN left of x = 0.5

    model = weak_form_physics(log_barrier, name="barrier")(strip(4))
    model.fix("left")
    with pytest.raises(NonFiniteError, match=r"physics 'barrier': the weak form's r0 is not "
                                             r"finite at cell 0, quadrature point 0: nan at "
                                             r"u = 0, grad u = \[0\. 0\.\]"):
        model.solve()


def test_parameters_are_the_functions_keywords_with_numeric_defaults():
    assert Stiffening.parameter_names() == ("c", "Q", "scale")
    assert Stiffening(strip(2), c=2.0).values["c"].tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match="unknown parameter"):
        Stiffening(strip(2), k=1.0)

    def no_default(g, T, c):
        return c * T

    with pytest.raises(TypeError, match="parameter 'c' needs a number as its default"):
        energy_physics(no_default)


def conduction_models(mesh, rng):
    k0 = 1.0 + rng.random(mesh.n_cells)
    beta = 0.3 * rng.random(mesh.n_cells)
    builtin = NonlinearHeatConduction(mesh, conductivity=k0, beta=beta,
                                      reference_temperature=0.5)
    derived = weak_form_physics(conduction_weak_form)(mesh, k0=k0, beta=beta, T_ref=0.5)
    return builtin, derived


def test_the_hand_conduction_tangent_equals_the_one_derived_from_its_weak_form():
    mesh = rectangle(4, 3, cell_type="quad8")
    rng = np.random.default_rng(4)
    builtin, derived = conduction_models(mesh, rng)
    T = rng.standard_normal(builtin.dofmap.n_dofs)
    _, u_q, grad_q = builtin._at_quadrature(T, None)
    scale = 1.0 + rng.random(mesh.n_cells)
    hand_A, hand_D = builtin.flux_tangent(u_q, grad_q, builtin.material_fields(scale=scale))
    J = derived._scaled(derived.integrand_tangent(
        np.concatenate([u_q[..., None], grad_q], axis=-1), derived.geometry().x,
        derived.material_fields(scale=scale)), derived.material_fields(scale=scale), 4)
    J = J[:, :, 0, :, 0, :]
    dim = mesh.dim
    A = np.broadcast_to(hand_A, (*u_q.shape[:2], 1, dim, 1, dim))[:, :, 0, :, 0, :]
    D = np.broadcast_to(hand_D, (*u_q.shape[:2], 1, dim, 1))[:, :, 0, :, 0]
    np.testing.assert_allclose(J[..., 1:, 1:], A, rtol=1e-12, atol=1e-12 * np.abs(A).max())
    np.testing.assert_allclose(J[..., 1:, 0], D, rtol=1e-12, atol=1e-12 * np.abs(D).max())
    assert not np.any(J[..., 0, :])  # no r0


def test_the_builtin_conduction_and_its_weak_form_solve_alike():
    mesh = rectangle(6, 4)
    builtin, derived = conduction_models(mesh, np.random.default_rng(5))
    fields = []
    for model in (builtin, derived):
        model.fix("left", value=0.5)
        model.volume_load(3.0)
        fields.append(np.asarray(model.solve().field))
    np.testing.assert_allclose(fields[1], fields[0], rtol=1e-12, atol=1e-12)


def test_the_flux_and_its_tangent_are_the_closed_form_derivatives_of_the_energy():
    mesh = rectangle(3, 2)
    model = Stiffening(mesh)
    rng = np.random.default_rng(6)
    c = 1.0 + rng.random(mesh.n_cells)
    fields = model.material_fields(c=c)
    _, u_q, grad_q = model._at_quadrature(rng.standard_normal(model.dofmap.n_dofs), None)
    g = grad_q[:, :, 0, :]
    stiffness = c[:, None] * (1 + np.sum(g * g, axis=-1))  # ∂ψ/∂g = c (1 + |g|²) g
    np.testing.assert_allclose(model.flux(u_q, grad_q, fields)[:, :, 0, :],
                               stiffness[..., None] * g, rtol=1e-13)
    A, D = model.flux_tangent(u_q, grad_q, fields)
    expected = (stiffness[..., None, None] * np.eye(2)
                + 2 * c[:, None, None, None] * g[..., :, None] * g[..., None, :])
    np.testing.assert_allclose(A[:, :, 0, :, 0, :], expected, rtol=1e-13)
    assert not np.any(D)  # ∂²ψ/∂g∂T = 0


def test_an_energy_not_differentiable_where_it_is_evaluated_is_named():
    def kink(g, T):
        return np.sqrt(np.sum(g * g, axis=-1))  # |∇T|: no derivative at ∇T = 0

    model = energy_physics(kink)(strip(4))
    model.fix("left")
    with pytest.raises(NonFiniteError, match=r"physics 'kink': the derivative of psi is not "
                                             r"finite at cell 0, quadrature point 0"):
        model.solve()
