"""Bad input of an elastoplastic load history, one clear error each; a Newton failure keeps
the last converged increment; cut-back increments are part of what the adjoint reverses."""

import numpy as np
import pytest

from fesens.ad import value_and_grad
from fesens.errors import MaterialError, NewtonError
from fesens.fem.analysis.incremental import IncrementalAnalysis
from fesens.mesh import box, rectangle
from fesens.physics.elastoplasticity import Elastoplasticity


def _model(traction=150.0, **material):
    mesh = rectangle(4, 2, 2.0, 1.0, "quad4")
    model = Elastoplasticity(mesh, **{"E": 200e3, "nu": 0.3, "yield_stress": 250.0,
                                      **material})
    model.fix("left")
    model.surface_load("right", (traction, 0.0), name="pull")
    return model


@pytest.mark.parametrize("factors", [[0.5, 1.0], [0.1, 0.0, -0.5]])
def test_factor_table_must_start_at_zero(factors):
    with pytest.raises(ValueError, match="factors must start at 0"):
        IncrementalAnalysis(_model(), factors)
    with pytest.raises(ValueError, match="dirichlet_factors must start at 0"):
        IncrementalAnalysis(_model(), [0.0, 1.0, 0.0], dirichlet_factors=[1.0, 1.0, 0.0])


def test_factor_tables_of_other_lengths_and_short_ones():
    with pytest.raises(ValueError, match="as many entries"):
        IncrementalAnalysis(_model(), [0.0, 1.0], dirichlet_factors=[0.0, 1.0, 0.5])
    with pytest.raises(ValueError, match="at least 2 finite factors"):
        IncrementalAnalysis(_model(), [0.0])


@pytest.mark.parametrize("bad", [0.0, -10.0])
def test_yield_stress_must_be_positive(bad):
    with pytest.raises(MaterialError, match="yield stress must be > 0"):
        _model(yield_stress=bad)
    model = _model()
    history = IncrementalAnalysis(model, [0.0, 1.0])
    with pytest.raises(MaterialError, match="yield stress must be > 0"):
        history.solve(yield_stress=bad)


@pytest.mark.parametrize("material, match", [
    ({"isotropic_modulus": -1e3}, "softening is refused: the isotropic_modulus"),
    ({"kinematic_modulus": -1e3}, "softening is refused: the kinematic_modulus"),
    ({"saturation_stress": 200.0, "saturation_rate": 10.0},
     "softening is refused: Voce's saturation_stress"),
])
def test_softening_is_refused(material, match):
    with pytest.raises(MaterialError, match=match):
        _model(**material)


def test_newton_failure_names_the_increment_and_keeps_the_last_converged():
    """Perfect plasticity loaded past its limit load (one hex8 in uniaxial stress, a
    traction 1.2 σ_y on its free face): the third increment has no equilibrium."""
    mesh = box(1, 1, 1, cell_type="hex8")
    model = Elastoplasticity(mesh, E=200e3, nu=0.3, yield_stress=250.0)
    model.fix("left", components=[0]).fix("bottom", components=[1])
    model.fix("back", components=[2]).surface_load("right", (300.0, 0.0, 0.0))
    history = IncrementalAnalysis(model, [0.0, 0.3, 0.6, 1.0], max_cutbacks=2,
                                  newton={"max_iterations": 8})
    with pytest.raises(NewtonError, match=r"increment 3 \(load factor 0\.6 to 1\) did not "
                                          r"converge with sub-increments down to 2\^-2"
                       ) as caught:
        history.solve()
    error = caught.value
    assert error.increment == 3 and error.last_converged == 2
    assert error.partial.n_increments == 2
    np.testing.assert_array_equal(error.partial.factors, [0.0, 0.3, 0.6])
    assert error.load_factor == pytest.approx(0.6)
    np.testing.assert_array_equal(error.state, error.partial.displacements[-1])


def test_cut_back_increments_are_reversed_by_the_adjoint():
    """A run whose plastic increment is cut back (too few Newton iterations for the full
    increment): the recorded sub-increments are re-run and reversed, and the gradient
    agrees with central differences."""
    mesh = rectangle(4, 2, 2.0, 1.0, "quad4")
    model = Elastoplasticity(mesh, E=200e3, nu=0.3, yield_stress=250.0,
                             isotropic_modulus=5e3)
    model.fix("left").fix("right", components=[1], value=0.01)
    history = IncrementalAnalysis(model, [0.0, 0.5, 1.0, 0.2, -0.8, 0.0],
                                  newton={"max_iterations": 3, "rtol": 1e-13})
    sol = history.solve()
    assert sol.substeps == {2: (0.5, 0.75, 1.0)}
    weights = np.linspace(0.0, 1.0, model.dofmap.n_dofs)

    def J(E):
        values = history.values(lambda state, t, w: 1e3 * np.dot(w, state.u)
                                + 0.1 * state.dissipation + 1e-3 * np.sum(state.reactions ** 2),
                                (weights,), E=E)
        return np.sum(values)

    _, slope = value_and_grad(J)(200e3)
    h = 2.0
    assert slope == pytest.approx((J(200e3 + h) - J(200e3 - h)) / (2 * h), rel=1e-5)


def test_the_history_is_an_analysis_whose_run_is_values():
    from fesens.fem.analysis import Analysis
    history = IncrementalAnalysis(_model(traction=280.0), [0.0, 1.0, -1.0])
    assert isinstance(history, Analysis)

    def term(state, t):
        return float(state.u[-2]) + t

    np.testing.assert_array_equal(history.run(term), history.values(term))


def test_a_plain_solve_is_refused_naming_the_incremental_analysis():
    with pytest.raises(TypeError, match="IncrementalAnalysis"):
        _model().solve()
