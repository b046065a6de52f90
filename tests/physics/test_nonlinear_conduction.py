"""Nonlinear heat conduction ``k(T) = k0 (1 + beta (T - T_ref))``: closed forms, the linear
limit, the refusal of k <= 0, and gradients through the Newton solve."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.ad import check_grad, taylor_test
from fesens.errors import NewtonError
from fesens.mesh.generators import rectangle
from fesens.objectives import compliance
from fesens.objectives.static import mean_value, value_at
from fesens.physics.conduction import HeatConduction
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction

K0, BETA, T0, T1 = 2.0, 0.5, 1.0, 3.0


def kirchhoff_rod(x, k0=K0, beta=BETA, t_ref=0.0, t0=T0, t1=T1, length=1.0):
    """Closed form of ``(k(T) T')' = 0``, ``T(0) = t0``, ``T(L) = t1``.

    The Kirchhoff transform ``Θ(T) = k0 [(T − T_ref) + β (T − T_ref)²/2]`` turns the equation
    into ``Θ'' = 0`` (Carslaw & Jaeger, *Conduction of Heat in Solids*, 2nd ed., 1959, §1.15):
    ``Θ`` is linear in ``x`` between its end values, and ``T`` is the root of the quadratic
    with ``k(T) > 0``.
    """
    def theta(t):
        return k0 * ((t - t_ref) + beta * (t - t_ref) ** 2 / 2)

    c = theta(t0) + (theta(t1) - theta(t0)) * x / length
    return t_ref + (-1.0 + np.sqrt(1.0 + 2.0 * beta * c / k0)) / beta


def rod(cell_type: str, nx: int, order=None, beta=BETA) -> NonlinearHeatConduction:
    mesh = rectangle(nx, 1, 1.0, 1.0 / nx, cell_type)
    model = NonlinearHeatConduction(mesh, conductivity=K0, beta=beta, quadrature_order=order)
    model.fix("left", value=T0)
    model.fix("right", value=T1)
    return model


@pytest.mark.parametrize(("cell_type", "order"), [("quad4", None), ("quad9", 4)])
def test_kirchhoff_closed_form_at_the_vertices(cell_type, order):
    """On a strip of quadrilaterals the discrete solution is a function of x whose weak form
    reduces to the 1D one; tested against piecewise-linear functions it makes Θ linear
    between the vertices, so the vertex temperatures are exact (the integrals are exact:
    default rule for quad4, order 4 for quad9's quartic integrand)."""
    model = rod(cell_type, 6, order)
    solution = model.solve()
    x = model.mesh.points[:, 0]
    vertices = np.isclose(x * 6, np.round(x * 6))
    error = np.abs(solution.temperature - kirchhoff_rod(x))
    assert error[vertices].max() < 1e-8
    # the heat flow q = −k T' = −dΘ/dx is uniform: −(Θ(T1) − Θ(T0)) / L
    flow = -K0 * ((T1 - T0) + BETA * (T1 ** 2 - T0 ** 2) / 2)
    assert np.allclose(solution.heat_flux(), [flow, 0.0], rtol=1e-8, atol=1e-8 * abs(flow))


@pytest.mark.parametrize(("cell_type", "order", "rate"),
                         [("tri3", None, 2.0), ("tri6", 4, 2.5), ("quad8", 4, 3.3)])
def test_kirchhoff_closed_form_mesh_convergence(cell_type, order, rate):
    """Triangles split the strip along diagonals, so the vertex values are not exact; the
    largest nodal error falls at least at the expected rate (measured: tri3 2.4–2.7, tri6
    2.6–2.8, quad8 3.5–3.7 between nx = 4, 8, 16)."""
    errors = []
    for nx in (4, 8, 16):
        model = rod(cell_type, nx, order)
        x = model.mesh.points[:, 0]
        errors.append(np.abs(model.solve().temperature - kirchhoff_rod(x)).max())
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert errors[-1] < 1e-4
    assert rates.min() > rate, rates


def test_beta_zero_is_linear_conduction():
    mesh = rectangle(5, 4, 1.0, 0.8, "quad4")
    kappa = 1.0 + np.random.default_rng(1).random(mesh.n_cells)
    linear = HeatConduction(mesh, conductivity=kappa)
    nonlinear = NonlinearHeatConduction(mesh, conductivity=kappa, beta=0.0,
                                        reference_temperature=20.0)
    for model in (linear, nonlinear):
        model.fix("left", value=20.0)
        model.fix("bottom", value=lambda p: 20.0 + p[:, :1])
        model.heat_source(4.0)
        model.flux_load("top", 2.0) if model is nonlinear else model.flux("top", 2.0)
    expected = linear.solve().temperature
    got = nonlinear.solve().temperature
    assert np.abs(got - expected).max() < 1e-10 * np.abs(expected).max()


def test_conductivity_not_positive_is_refused():
    model = rod("quad4", 4, beta=-0.5)  # k(3) = k0 (1 - 1.5) < 0 at the right end
    with pytest.raises(NewtonError, match=r"conductivity k\(T\).*<= 0") as caught:
        model.solve(newton={"max_cutbacks": 3})
    assert "cells" in str(caught.value)
    assert caught.value.load_factor < 1.0
    with pytest.raises(ValueError, match="conductivity"):
        NonlinearHeatConduction(rectangle(2, 2), conductivity=-1.0)


# ------------------------------------------------------------ gradients
@pytest.fixture
def plate():
    mesh = rectangle(4, 3, 1.0, 0.6, "quad4")
    model = NonlinearHeatConduction(mesh, conductivity=2.0, beta=0.4,
                                    reference_temperature=0.5)
    model.fix("left", value=1.0)
    model.fix("right", value=lambda p: 2.0 + p[:, :1])
    model.heat_source(3.0, name="source")
    model.flux_load("top", 1.5, name="top")
    return model


def objective(solution):
    """A mix of a compliance and a quadratic of the state (ū has no special structure)."""
    return compliance(solution) + 0.3 * np.sum(solution.u ** 3)


def parameter_cases(model):
    rng = np.random.default_rng(2)
    n = model.mesh.n_cells
    return {
        "conductivity": (lambda k: objective(model.solve(conductivity=k)),
                         2.0 + rng.random(n)),
        "beta": (lambda b: objective(model.solve(beta=b)), 0.3 + 0.2 * rng.random(n)),
        "scale": (lambda s: objective(model.solve(scale=s)), 0.5 + rng.random(n)),
        "source": (lambda q: objective(model.solve(loads={"source": q})), 1.7),
        "dirichlet": (lambda g: objective(model.solve(dirichlet=g)),
                      model.prescribed_values() * 1.05),
        "points": (lambda X: objective(model.solve(points=X)),
                   model.mesh.points + 0.01 * rng.standard_normal(model.mesh.points.shape)),
    }


@pytest.mark.parametrize("name", ["conductivity", "beta", "scale", "source", "dirichlet",
                                  "points"])
def test_taylor_through_the_newton_solve(plate, name):
    fun, x = parameter_cases(plate)[name]
    result = taylor_test(fun, x, verbose=False)
    assert result.rate > 1.9, result.table()


@pytest.mark.parametrize("name", ["beta", "dirichlet", "points"])
def test_taylor_from_several_load_steps(plate, name):
    """Gradients of a state reached through 4 load steps (no warm start) are the same rule."""
    fun, x = parameter_cases(plate)[name]
    key = {"beta": "beta", "dirichlet": "dirichlet", "points": "points"}[name]

    def stepped(value):
        solution = plate.solve(steps=4, warm_start=False, newton={"adaptive": False},
                               **{key: value})
        assert len(solution.report.load_factors) >= 5
        return objective(solution)

    result = taylor_test(stepped, x, verbose=False)
    assert result.rate > 1.9, result.table()
    assert fun(x) == pytest.approx(stepped(x), rel=1e-10)


@pytest.mark.parametrize("name", ["conductivity", "source", "points"])
def test_central_differences_agree(plate, name):
    fun, x = parameter_cases(plate)[name]
    assert check_grad(fun, x, rtol=1e-5) < 1e-5


def test_value_objectives_read_the_nonlinear_state(plate):
    """The static objectives read a nonlinear solution like a linear one (value_at,
    mean_value), and their gradients pass the Taylor test."""
    def fun(k):
        solution = plate.solve(conductivity=k)
        return value_at(solution, (0.5, 0.4)) + mean_value(solution, "top")

    result = taylor_test(fun, np.full(plate.mesh.n_cells, 2.2), step=2e-3, verbose=False)
    assert result.rate > 1.9, result.table()
