"""Dense linear algebra of the traced numpy subset: ``det``, ``inv``, ``solve`` and ``cross``
on stacks of matrices (``(..., n, n)``) and vectors (``(..., 3)``), and the isoparametric
Jacobian of FE kernels differentiated with respect to the node coordinates.

Each case is ``(function, input)`` as in ``test_ad_primitives.py``: plain numpy on traced
values, scalarised by :func:`ad_helpers.scalarise`; a tuple input differentiates with
respect to all of its entries. Matrices are ``I + 0.25 · noise``: well conditioned.
"""

import numpy as np
import pytest
from ad_helpers import assert_gradient, normal, scalarise

from fesens.ad import grad
from fesens.ad.pytree import flatten


def well_conditioned(shape, seed: int) -> np.ndarray:
    """A stack ``(..., n, n)`` of matrices ``I + 0.25 · noise`` (condition numbers < 10)."""
    matrices = np.eye(shape[-1]) + 0.25 * normal(shape, seed)
    assert np.linalg.cond(matrices).max() < 10
    return matrices


A2, A3 = well_conditioned((4, 2, 2), seed=1), well_conditioned((5, 3, 3), seed=2)
A3_SINGLE = well_conditioned((3, 3), seed=3)
V3 = normal((5, 3), seed=4)  # a vector per matrix of A3
B3 = normal((5, 3, 2), seed=5)  # two right-hand sides per matrix of A3
B3_SHARED = normal((3, 2), seed=6)  # the same right-hand sides for every matrix
U, W = normal((6, 3), seed=7), normal((6, 3), seed=8)
W_ROWS, W_SINGLE = normal((4, 1, 3), seed=9), normal(3, seed=10)

# ------------------------------------------------------------------ isoparametric Jacobians
_GAUSS = 1.0 / np.sqrt(3.0)
_QUAD_CORNERS = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
_QUAD_POINTS = _GAUSS * _QUAD_CORNERS  # 2 x 2 Gauss points, weight 1 each


def _bilinear_gradients(points):
    """``∂N_a/∂ξ_j`` of the bilinear quadrilateral at ``points``: ``(n_qp, 4, 2)``."""
    xi, eta = points[:, None, 0], points[:, None, 1]
    xi_a, eta_a = _QUAD_CORNERS[:, 0], _QUAD_CORNERS[:, 1]
    return np.stack([xi_a * (1 + eta * eta_a), eta_a * (1 + xi * xi_a)], axis=-1) / 4


QUAD_DN, QUAD_W = _bilinear_gradients(_QUAD_POINTS), np.ones(4)
TET_DN = np.array([[[-1.0, -1.0, -1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])
TET_W = np.array([1.0 / 6.0])
# three distorted squares side by side, two distorted reference tetrahedra: (n_cells, n_nodes, dim)
QUAD_COORDS = (0.5 * (_QUAD_CORNERS + 1) + np.arange(3)[:, None, None] * [1.0, 0.0]
               + 0.1 * normal((3, 4, 2), seed=11))
TET_COORDS = np.vstack([np.zeros((1, 3)), np.eye(3)]) + 0.1 * normal((2, 4, 3), seed=12)


def jacobian(coords, dN):
    """``J_eqij = Σ_a x_eai ∂N_a/∂ξ_j``: ``(n_cells, n_qp, dim, dim)``."""
    return np.einsum("eai,qaj->eqij", coords, dN)


def scaled_inverse(coords, dN):
    """``det(J) J⁻¹`` (the adjugate), as element kernels combine them."""
    J = jacobian(coords, dN)
    return np.linalg.det(J)[..., None, None] * np.linalg.inv(J)


def stiffness(coords, dN, w, optimize=True):
    """Laplacian element matrices ``K_eaibj = Σ_q dx_eq G_eqai G_eqbj`` with physical shape
    gradients ``G = dN J⁻¹`` and weights ``dx = det(J) w``: ``(n_cells, n, dim, n, dim)``."""
    J = jacobian(coords, dN)
    G = np.einsum("qaj,eqji->eqai", dN, np.linalg.inv(J))
    dx = np.linalg.det(J) * w
    return np.einsum("eq,eqai,eqbj->eaibj", dx, G, G, optimize=optimize)


CASES = {
    "det 2x2 stack": (np.linalg.det, A2),
    "det 3x3 stack": (np.linalg.det, A3),
    "det 3x3": (np.linalg.det, A3_SINGLE),
    "inv 2x2 stack": (np.linalg.inv, A2),
    "inv 3x3 stack": (np.linalg.inv, A3),
    "inv 3x3": (np.linalg.inv, A3_SINGLE),
    "inv of inv": (lambda a: np.linalg.inv(np.linalg.inv(a)) @ a, A2),
    "solve vector": (lambda p: np.linalg.solve(p[0], p[1]), (A3_SINGLE, V3[0])),
    "solve matrix 2x2 stack": (lambda p: np.linalg.solve(p[0], p[1]), (A2, B3[:4, :2])),
    "solve matrix 3x3 stack": (lambda p: np.linalg.solve(p[0], p[1]), (A3, B3)),
    "solve one column per matrix": (lambda p: np.linalg.solve(p[0], p[1][..., None]),
                                    (A3, V3)),
    "solve broadcast matrix": (lambda p: np.linalg.solve(p[0], p[1]), (A3_SINGLE, B3)),
    "solve broadcast right-hand side": (lambda p: np.linalg.solve(p[0], p[1]),
                                        (A3, B3_SHARED)),
    "solve constant matrix": (lambda b: np.linalg.solve(A3, b), B3),
    "solve constant right-hand side": (lambda a: np.linalg.solve(a, B3), A3),
    "cross": (lambda p: np.cross(p[0], p[1]), (U, W)),
    "cross same operand": (lambda u: np.cross(u, u + W), U),
    "cross broadcast (6,3)x(3,)": (lambda p: np.cross(p[0], p[1]), (U, W_SINGLE)),
    "cross broadcast (4,1,3)x(6,3)": (lambda p: np.cross(p[0], p[1]), (W_ROWS, U)),
    "cross constant first": (lambda w: np.cross(U, w), W),
    "det(J) inv(J) quad": (lambda x: scaled_inverse(x, QUAD_DN), QUAD_COORDS),
    "det(J) inv(J) tet": (lambda x: scaled_inverse(x, TET_DN), TET_COORDS),
    "stiffness quad": (lambda x: stiffness(x, QUAD_DN, QUAD_W), QUAD_COORDS),
    "stiffness tet": (lambda x: stiffness(x, TET_DN, TET_W), TET_COORDS),
}
if int(np.__version__.split(".")[0]) >= 2:  # numpy 2 broadcasts a 1-D b over a stack
    CASES["solve vector broadcast"] = (lambda p: np.linalg.solve(p[0], p[1]), (A3, V3[0]))

PARAMS = [pytest.param(fun, x, id=name) for name, (fun, x) in CASES.items()]


@pytest.mark.parametrize(("fun", "x"), PARAMS)
def test_gradient(fun, x):
    assert_gradient(lambda x: scalarise(fun(x)), x)


@pytest.mark.parametrize(("fun", "x"), PARAMS)
def test_hessian_vector_product(fun, x):
    """The rules are traced themselves: ``x ↦ ⟨∇f(x), v⟩`` has the right gradient ``H v``
    (a small first step, as in ``test_ad_primitives.py``)."""
    def f(x):
        return scalarise(fun(x))

    leaves, _ = flatten(x)
    directions = [normal(np.shape(leaf), 99 + k) for k, leaf in enumerate(leaves)]

    def slope(x):
        gradients, _ = flatten(grad(f)(x))
        return sum(np.sum(g * v) for g, v in zip(gradients, directions, strict=True))

    assert_gradient(slope, x, step=1e-4)


# ------------------------------------------------------------------ closed forms
def test_second_derivative_of_det_2x2_closed_form():
    """``⟨∇det(A), V⟩ = a₁₁v₀₀ − a₁₀v₀₁ − a₀₁v₁₀ + a₀₀v₁₁`` for 2 x 2 ``A``: its gradient is
    ``[[v₁₁, −v₁₀], [−v₀₁, v₀₀]]`` whatever ``A``."""
    V = normal((4, 2, 2), seed=20)

    def slope(a):
        return np.sum(grad(lambda a: np.sum(np.linalg.det(a)))(a) * V)

    expected = np.stack([np.stack([V[:, 1, 1], -V[:, 1, 0]], -1),
                         np.stack([-V[:, 0, 1], V[:, 0, 0]], -1)], -2)
    assert np.allclose(grad(slope)(A2), expected, rtol=1e-12, atol=1e-12)


def test_gradient_of_det_is_the_cofactor_matrix():
    cofactors = np.linalg.det(A3)[:, None, None] * np.swapaxes(np.linalg.inv(A3), -1, -2)
    assert np.allclose(grad(lambda a: np.sum(np.linalg.det(a)))(A3), cofactors, rtol=1e-12)


def test_einsum_optimize_true_matches_the_unoptimised_contraction():
    def energy(optimize):
        return lambda x: np.sum(stiffness(x, QUAD_DN, QUAD_W, optimize) ** 2)

    values = [energy(o)(QUAD_COORDS) for o in (True, False)]
    gradients = [grad(energy(o))(QUAD_COORDS) for o in (True, False)]
    assert values[0] == pytest.approx(values[1], rel=1e-13)
    assert np.allclose(gradients[0], gradients[1], rtol=1e-12, atol=1e-12)


def test_translating_an_element_leaves_its_stiffness_unchanged():
    """``K`` depends on coordinate differences only: ``∇(Σ K) · t = 0`` for a rigid shift."""
    g = grad(lambda x: np.sum(stiffness(x, TET_DN, TET_W)))(TET_COORDS)
    assert np.allclose(np.sum(g, axis=1), 0.0, atol=1e-12)


# ------------------------------------------------------------------ unsupported layouts
@pytest.mark.parametrize("kwargs", [{"axis": 0}, {"axisa": 0}, {"axisc": 0}])
def test_cross_along_another_axis_is_refused(kwargs):
    with pytest.raises(NotImplementedError, match="last axis"):
        grad(lambda u: np.sum(np.cross(u, W[:3, :3], **kwargs)))(U[:3])


def test_cross_of_2_vectors_is_refused():
    with pytest.raises(NotImplementedError, match="3-vectors"):
        grad(lambda u: np.sum(np.cross(u, U[:, :2])))(W[:, :2])
