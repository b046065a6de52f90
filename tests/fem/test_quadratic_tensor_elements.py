"""quad8, quad9, hex20, hex27: completeness beyond P2, cantilever convergence against linear
elements, and Taylor tests of the compliance in Young's modulus and the node coordinates."""

import numpy as np
import pytest
from fem_helpers import distorted

from fesens.ad import taylor_test
from fesens.fem.elements import ELEMENTS
from fesens.mesh import box, rectangle
from fesens.objectives import compliance
from fesens.physics import Elasticity

QUADRATIC_TENSOR = ["quad8", "quad9", "hex20", "hex27"]


@pytest.mark.parametrize("name", QUADRATIC_TENSOR)
def test_serendipity_and_lagrange_spaces(name):
    """Serendipity reproduces ξ²η (and ξ²ηζ in 3D) but not ξ²η²; Lagrange also ξ²η²(ζ²)."""
    element = ELEMENTS[name]
    xi = np.random.default_rng(3).uniform(-1, 1, (6, element.dim))
    N = element.shape(xi)

    def reproduces(exponents) -> bool:
        values = np.prod(element.nodes ** np.asarray(exponents), axis=1)
        return np.allclose(N @ values, np.prod(xi ** np.asarray(exponents), axis=1), atol=1e-13)

    cubic = (2, 1) if element.dim == 2 else (2, 1, 1)
    biquadratic = (2,) * element.dim
    assert reproduces(cubic)
    assert reproduces(biquadratic) == name.endswith(("9", "27"))


# Cantilever, 10 x 1 (x 1), clamped at x = 0, uniform shear traction 1 at x = 10; E = 1000,
# ν = 0: the 3D solution is the plane-stress one, constant across the width, so both are
# compared with one reference, the compliance of quad9 on an 80 x 8 mesh (its own error is
# about 1e-6 judging by the convergence below).
L, E = 10.0, 1000.0


def cantilever_compliance(name: str, n: int) -> float:
    """``n`` cells along the beam and ``max(1, n // 8)`` across (per direction in 3D)."""
    across = max(1, n // 8)
    if ELEMENTS[name].dim == 2:
        mesh = rectangle(n, across, L, 1.0, cell_type=name)
        model = Elasticity(mesh, E=E, nu=0.0, plane="stress").fix("left")
        model.traction("right", (0.0, -1.0))
    else:
        mesh = box(n, across, across, L, 1.0, 1.0, cell_type=name)
        model = Elasticity(mesh, E=E, nu=0.0).fix("left")
        model.traction("right", (0.0, -1.0, 0.0))
    return model.solve().compliance()


@pytest.fixture(scope="module")
def reference() -> float:
    return cantilever_compliance("quad9", 80)


def test_cantilever_quadratic_quadrilaterals_converge_much_faster(reference):
    errors = {name: [abs(cantilever_compliance(name, n) / reference - 1) for n in (8, 16)]
              for name in ("tri3", "quad4", "tri6", "quad8", "quad9")}
    for name, (coarse, fine) in errors.items():
        print(f"{name}: compliance error {coarse:.2e} (8 x 1 cells), {fine:.2e} (16 x 2)")
    # Measured: quad4 4.4e-1 / 1.6e-1, quad8 and quad9 1.5e-3 / 1.2e-4.
    for name in ("quad8", "quad9"):
        assert errors[name][0] < 3e-3
        assert errors[name][1] < 3e-4
        assert errors[name][0] > 8 * errors[name][1]  # energy error falls like h^3 or faster
        assert errors[name][1] < errors["quad4"][1] / 100
        assert errors[name][1] < errors["tri3"][1] / 100


def test_cantilever_quadratic_hexahedra_converge_much_faster(reference):
    errors = {name: [abs(cantilever_compliance(name, n) / reference - 1) for n in (5, 10)]
              for name in ("hex8", "hex20", "hex27")}
    for name, (coarse, fine) in errors.items():
        print(f"{name}: compliance error {coarse:.2e} (5 x 1 x 1 cells), {fine:.2e} (10 x 1 x 1)")
    # Measured: hex8 6.7e-1 / 3.3e-1, hex20 and hex27 3.8e-3 / 1.2e-3.
    for name in ("hex20", "hex27"):
        assert errors[name][1] < 2e-3
        assert errors[name][0] > 2 * errors[name][1]
        assert errors[name][1] < errors["hex8"][1] / 100


def _loaded_model(name: str) -> Elasticity:
    """A small distorted block, clamped on the left, pulled and sheared on the right."""
    if ELEMENTS[name].dim == 2:
        mesh = distorted(rectangle(3, 2, 1.5, 1.0, cell_type=name), amount=0.2)
        model = Elasticity(mesh, E=2.0, nu=0.3, plane="stress")
        model.traction("right", (1.0, -0.5))
    else:
        mesh = distorted(box(2, 1, 1, 2.0, 1.0, 1.0, cell_type=name), amount=0.2)
        model = Elasticity(mesh, E=2.0, nu=0.3)
        model.traction("right", (1.0, -0.5, 0.25))
    return model.fix("left")


@pytest.mark.parametrize("name", QUADRATIC_TENSOR)
def test_taylor_compliance_in_youngs_modulus_per_cell(name):
    model = _loaded_model(name)
    E_cells = np.random.default_rng(1).uniform(1.0, 3.0, model.mesh.n_cells)
    result = taylor_test(lambda E: compliance(model.solve(E=E)), E_cells, verbose=False)
    assert abs(result.rate - 2) < 0.1


@pytest.mark.parametrize("name", QUADRATIC_TENSOR)
def test_taylor_compliance_in_node_coordinates(name):
    model = _loaded_model(name)
    X = model.mesh.points.copy()
    direction = np.random.default_rng(2).uniform(-1, 1, X.shape)
    result = taylor_test(lambda X: compliance(model.solve(points=X)), X, direction,
                         step=2e-3, verbose=False)
    assert abs(result.rate - 2) < 0.1
