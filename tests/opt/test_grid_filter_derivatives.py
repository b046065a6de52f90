"""Forward mode and nested derivatives through the density filter's stencil form.

On a structured grid :class:`~fesens.opt.DensityFilter` applies ``W`` as a stencil
correlation (:func:`fesens.opt.grid_filter.apply_cone_stencil`); its JVP (``W ẋ``) and its
VJP (the transposed correlation, a primitive whose own VJP is ``W``) must be traceable, so
that ``jvp``, ``hvp`` and ``grad(grad(...))`` see the same numbers as the matrix form
:attr:`~fesens.opt.DensityFilter.matrix`.
"""

import numpy as np
import pytest

from fesens.ad import grad, hvp, jvp, taylor_test
from fesens.mesh import box, rectangle
from fesens.opt import DensityFilter
from fesens.opt.grid_filter import apply_cone_stencil, apply_cone_stencil_transpose

GRIDS = {
    "quad4 30x10": (rectangle(30, 10, 30.0, 10.0), 2.4),
    "quad9 7x4": (rectangle(7, 4, 3.5, 1.0, cell_type="quad9"), 0.9),
    "hex8 5x4x3": (box(5, 4, 3, 5.0, 4.0, 3.0), 1.8),
    "hex20 4x3x3": (box(4, 3, 3, 2.0, 1.5, 1.0, cell_type="hex20"), 1.2),
}


@pytest.fixture(params=list(GRIDS), ids=list(GRIDS))
def setting(request):
    """The filter on a grid (stencil form), a point, a direction and weights."""
    mesh, radius = GRIDS[request.param]
    density = DensityFilter(mesh, radius)
    assert density.stencil is not None
    rng = np.random.default_rng(11)
    n = mesh.n_cells
    return (density, rng.uniform(0.1, 1.0, n), rng.standard_normal(n),
            rng.standard_normal(n))


def cubic(density, weights):
    """``f(x) = Σ_e w_e (W x)_e³``: ``∇f = 3 Wᵀ (w (Wx)²)``, ``∇²f = 6 Wᵀ diag(w Wx) W``."""
    return lambda x: np.sum(weights * density(x) ** 3)


def test_jvp_through_the_stencil_equals_the_matrix_and_the_gradient(setting):
    density, x, v, weights = setting
    W = density.matrix
    value, tangent = jvp(density, (x,), (v,))
    np.testing.assert_allclose(value, W @ x, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tangent, W @ v, rtol=1e-12, atol=1e-14)
    f = cubic(density, weights)
    value, slope = jvp(f, (x,), (v,))
    assert np.isclose(slope, grad(f)(x) @ v, rtol=1e-12)
    assert np.isclose(slope, 3.0 * (weights * (W @ x) ** 2) @ (W @ v), rtol=1e-12)


def test_hvp_through_the_stencil_equals_the_matrix_and_differences(setting):
    density, x, v, weights = setting
    W = density.matrix
    f = cubic(density, weights)
    product = hvp(f)(x, v)
    expected = 6.0 * (W.T @ (weights * (W @ x) * (W @ v)))
    np.testing.assert_allclose(product, expected, rtol=1e-10, atol=1e-12)
    step = 1e-5
    difference = (grad(f)(x + step * v) - grad(f)(x - step * v)) / (2.0 * step)
    np.testing.assert_allclose(product, difference, rtol=1e-6,
                               atol=1e-7 * np.abs(product).max())


def test_second_derivative_through_the_stencil_passes_a_taylor_test(setting):
    """``x ↦ ∇f(x)·u`` differentiated again (reverse over reverse: the transposed
    correlation's own VJP) converges at second order and equals the matrix Hessian."""
    density, x, v, weights = setting
    W = density.matrix
    f = cubic(density, weights)
    directional = lambda x: grad(f)(x) @ weights  # noqa: E731
    result = taylor_test(directional, x, v, verbose=False)
    assert result.rate > 1.9
    expected = 6.0 * (W.T @ (weights * (W @ x) * (W @ weights)))
    np.testing.assert_allclose(grad(directional)(x), expected, rtol=1e-10, atol=1e-12)


def test_transposed_stencil_primitive_is_differentiable(setting):
    """The VJP primitive of the stencil: its value is ``Wᵀ g``, its JVP ``Wᵀ ġ`` and its VJP
    ``W ȳ``."""
    density, _, v, weights = setting
    W, stencil = density.matrix, density.stencil
    value, tangent = jvp(lambda g: apply_cone_stencil_transpose(stencil, g),
                         (weights,), (v,))
    np.testing.assert_allclose(value, W.T @ weights, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tangent, W.T @ v, rtol=1e-12, atol=1e-14)
    cotangent = grad(lambda g: apply_cone_stencil_transpose(stencil, g) @ v)(weights)
    np.testing.assert_allclose(cotangent, W @ v, rtol=1e-12, atol=1e-14)
    pulled = grad(lambda x: apply_cone_stencil(stencil, x) @ v)(weights)
    np.testing.assert_allclose(pulled, W.T @ v, rtol=1e-12, atol=1e-14)
