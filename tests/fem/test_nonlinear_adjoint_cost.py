"""What the adjoint of a nonlinear solve costs: its products ``K*ᵀ λ`` apply the
hand-derived tangent at the quadrature points (never assembled, no trace of the residual
in the state), equal to the assembled tangent's transpose; the refined adjoint factorizes
nothing and evaluates the residual once (the traced pullback to the inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from fesens.ad import taylor_test, value_and_grad, vjp
from fesens.fem.nonlinear.implicit_solve import _on_free_dofs
from fesens.mesh.generators import box, rectangle
from fesens.objectives import compliance
from fesens.physics.hyperelasticity import FiniteStrainElasticity
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction


def heat():
    """``k(T) = k₀ (1 + β T)``: a tangent with a ``∂P/∂T`` term, not symmetric."""
    model = NonlinearHeatConduction(rectangle(8, 4, 1.0, 0.5, "quad4"), conductivity=1.5,
                                    beta=0.8)
    model.fix("left", value=0.5)
    model.fix("right", value=4.0)
    model.heat_source(5.0)
    return model, {"conductivity": 1.5 * (1 + 0.1 * np.sin(np.arange(32)))}


def beam2d():
    model = FiniteStrainElasticity(rectangle(6, 2, 2.0, 0.4, "quad4"), E=100.0, nu=0.3)
    model.fix("left")
    model.point_load("right", (0.0, -0.5))
    return model, {"E": 100.0 * (1 + 0.1 * np.cos(np.arange(12)))}


def beam3d():
    model = FiniteStrainElasticity(box(4, 2, 2, 2.0, 0.5, 0.5, "hex8"), E=100.0, nu=0.3,
                                   law="saint-venant-kirchhoff")
    model.fix("left")
    model.point_load("right", (0.0, -0.05, 0.02))
    return model, {"E": 100.0 * (1 + 0.1 * np.cos(np.arange(16)))}


def void2d():
    """The energy interpolation of void cells: ``γ² A(γH) + (1 − γ²) C`` per cell."""
    model = FiniteStrainElasticity(rectangle(6, 2, 2.0, 0.4, "quad4"), E=100.0, nu=0.3,
                                   void_treatment="energy_interpolation")
    model.fix("left")
    model.point_load("right", (0.0, -0.5))
    return model, {"scale": np.linspace(0.05, 1.0, 12)}


CASES = {"heat": heat, "neo-hookean-2d": beam2d, "svk-3d": beam3d, "void-2d": void2d}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_transposed_action_is_the_assembled_tangents_transpose(case):
    model, parameters = CASES[case]()
    solution = model.solve(**parameters)
    u = np.asarray(solution.u)
    fields = model.material_fields(**parameters)
    K = model.tangent(u, fields).tocsr()
    product = _on_free_dofs(model, model.transposed_tangent(u, fields))
    v = np.random.default_rng(0).standard_normal(model.free_dofs.size)
    expected = K.T @ v
    assert np.linalg.norm(product(v) - expected) <= 1e-13 * np.linalg.norm(expected)


@pytest.mark.parametrize("case", ["heat", "neo-hookean-2d"])
@pytest.mark.parametrize("warm", [False, True])
def test_the_refined_adjoint_factorizes_nothing_and_evaluates_the_residual_once(
        case, warm, monkeypatch):
    model, parameters = CASES[case]()
    (name, value), = parameters.items()
    backend = model.tangent_solver()
    calls = {"internal_forces": 0, "tangent": 0}
    for method in calls:
        original = getattr(model, method)

        def counted(*args, method=method, original=original, **kwargs):
            calls[method] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(model, method, counted)

    def fun(x):
        return compliance(model.solve(**{name: x}, warm_start=warm))

    fun(value)  # the start of a warm solve
    _, pull = vjp(fun, value * (1 + 0.01 * np.cos(np.arange(value.size))))
    numeric, forward = backend.stats["n_numeric"], dict(calls)
    pull(1.0)
    assert backend.stats["n_numeric"] == numeric
    assert {k: calls[k] - forward[k] for k in calls} == {"internal_forces": 1, "tangent": 0}


@pytest.mark.parametrize("case", ["neo-hookean-2d", "svk-3d", "void-2d"])
def test_taylor_rate_and_central_differences_of_the_warm_gradient(case):
    """The gradient through the refined adjoint (warm starts, as in an optimization loop):
    second-order Taylor remainders and central differences along a random direction (Newton
    to ``rtol = 1e-13``, so that its own error, divided by the step, stays below 1e-7)."""
    model, parameters = CASES[case]()
    (name, value), = parameters.items()

    def fun(x):
        return compliance(model.solve(**{name: x}, newton={"rtol": 1e-13, "stol": 0.0}))

    fun(value)
    result = taylor_test(fun, value, verbose=False)
    assert result.rate > 1.9, result.table()
    direction = np.random.default_rng(1).standard_normal(value.size)
    h = 1e-5 * np.max(np.abs(value))
    central = (fun(value + h * direction) - fun(value - h * direction)) / (2 * h)
    gradient = value_and_grad(fun)(value)[1]
    assert abs(central - gradient @ direction) <= 1e-6 * abs(central)
