"""Every primitive of the traced numpy subset: Taylor test and central differences.

Each case is ``(function, input)``: users write plain numpy on traced values, so the
functions below are ordinary numpy code. Non-scalar outputs are scalarised by
:func:`ad_helpers.scalarise`. A tuple input differentiates with respect to both of its
entries (the rules of both arguments of a binary primitive at once). Inputs are chosen
away from kinks (``abs``, ``max``, ``clip``, ``maximum``, ``where``).
"""

import numpy as np
import pytest
from ad_helpers import assert_gradient, normal, scalarise, signed, spaced, uniform

from fesens.ad import grad

# ------------------------------------------------------------------ inputs and constants
V = uniform(5, 0.5, 1.5, seed=1)  # positive vector
V2 = uniform(5, 0.5, 1.5, seed=2)
SV = signed(5, seed=3)  # no entry near 0
UNIT = uniform(5, -0.9, 0.9, seed=4)  # inside (-1, 1)
M = uniform((3, 4), 0.5, 1.5, seed=5)
M2 = uniform((3, 4), 0.5, 1.5, seed=6)
T3 = normal((2, 3, 4), seed=7)
R26 = normal((2, 6), seed=15)
SP = spaced((2, 3, 4), seed=8)  # distinct, well separated values
SV5 = spaced(5, seed=9, start=0.2, gap=0.2)  # 0.2, 0.4, ..., 1.0 shuffled
C5 = uniform(5, 0.5, 1.5, seed=10)  # constants
C34 = normal((3, 4), seed=11)
C4 = normal(4, seed=12)
C3 = normal(3, seed=13)
C45 = normal((4, 5), seed=14)
MASK5 = np.array([True, False, True, True, False])
MASK34 = C34 > 0
REPEATED = np.array([0, 2, 2, 4, 0, 2])
HALF = np.full(5, 0.5)

# The exact ufunc objects, so that the ids below name what is exercised.
UNARY_UFUNCS = {
    "exp": (np.exp, SV), "log": (np.log, V), "sqrt": (np.sqrt, V), "sin": (np.sin, SV),
    "cos": (np.cos, SV), "tan": (np.tan, UNIT), "tanh": (np.tanh, SV), "sinh": (np.sinh, SV),
    "cosh": (np.cosh, SV), "log1p": (np.log1p, V), "expm1": (np.expm1, SV),
    "arctan": (np.arctan, SV), "abs": (np.abs, SV),
    "abs() builtin": (abs, SV), "square": (np.square, SV), "reciprocal": (np.reciprocal, SV),
    "negative": (np.negative, SV),
}

ARITHMETIC = {
    # + - * / between traced values, and with constants on either side
    "add traced": (lambda p: p[0] + p[1], (SV, V2)),
    "add const array": (lambda x: x + C5, SV),
    "radd ndarray": (lambda x: C5 + x, SV),
    "radd float": (lambda x: 2.5 + x, SV),
    "np.add": (lambda x: np.add(C5, x), SV),
    "sub traced": (lambda p: p[0] - p[1], (SV, V2)),
    "sub const": (lambda x: x - C5, SV),
    "rsub ndarray": (lambda x: C5 - x, SV),
    "rsub float": (lambda x: 2.5 - x, SV),
    "rsub numpy scalar": (lambda x: np.float64(2.5) - x, SV),
    "mul traced": (lambda p: p[0] * p[1], (SV, V2)),
    "mul same box": (lambda x: x * x, SV),
    "mul const": (lambda x: x * C5, SV),
    "rmul ndarray": (lambda x: C5 * x, SV),
    "rmul float": (lambda x: 2.5 * x, SV),
    "rmul numpy scalar": (lambda x: np.float64(2.5) * x, SV),
    "rmul 0-d array": (lambda x: np.array(2.5) * x, SV),
    "div traced": (lambda p: p[0] / p[1], (SV, V2)),
    "div const": (lambda x: x / C5, SV),
    "div int": (lambda x: x / 3, SV),
    "rdiv ndarray": (lambda x: C5 / x, SV),
    "rdiv float": (lambda x: 2.5 / x, SV),
    "np.divide": (lambda x: np.divide(C5, x), SV),
    "neg": (lambda x: -x, SV),
    "pos": (lambda x: +x * x, SV),
    # broadcasting in both directions: the cotangent of the smaller operand is summed
    "add broadcast (3,1)+(4,)": (lambda p: p[0] + p[1], (M[:, :1], C4)),
    "mul broadcast (3,4)*(4,)": (lambda p: p[0] * p[1], (M, C4)),
    "mul scalar*array": (lambda p: p[0] * p[1], (1.3, SV)),
    "div broadcast (3,4)/(3,1)": (lambda p: p[0] / p[1], (C34, M[:, 1:2])),
    "sub broadcast (1,4)-(3,1)": (lambda p: p[0] - p[1], (M[:1], M2[:, :1])),
    # powers
    "pow 2": (lambda x: x**2, SV),
    "pow 1": (lambda x: x**1 * x, SV),
    "pow 3": (lambda x: x**3, SV),
    "pow 0.5": (lambda x: x**0.5, V),
    "pow -1.5": (lambda x: x**-1.5, V),
    "pow const array": (lambda x: x**C5, V),
    "rpow float": (lambda x: 2.0**x, SV),
    "rpow ndarray": (lambda x: C5**x, SV),
    "rpow numpy scalar": (lambda x: np.float64(2.0) ** x, SV),
    "rpow int": (lambda x: 3**x, SV),
    "pow traced base and exponent": (lambda p: p[0] ** p[1], (V, SV)),
    "pow broadcast traced": (lambda p: p[0] ** p[1], (V[:4], M)),
    "np.power": (lambda x: np.power(x, 3.0), SV),
}

BINARY_UFUNCS = {
    "arctan2 traced": (lambda p: np.arctan2(p[0], p[1]), (SV, signed(5, seed=20))),
    "arctan2 const x": (lambda y: np.arctan2(y, C5), SV),
    "arctan2 const y": (lambda x: np.arctan2(C5, x), SV),
    "maximum traced": (lambda p: np.maximum(p[0], p[1]), (SV5, SV5[::-1] + 0.1)),
    "maximum float": (lambda x: np.maximum(x, 0.5), SV5),
    "maximum const first": (lambda x: np.maximum(HALF, x), SV5),
    "minimum traced": (lambda p: np.minimum(p[0], p[1]), (SV5, SV5[::-1] + 0.1)),
    "minimum float": (lambda x: np.minimum(x, 0.5), SV5),
    "minimum const first": (lambda x: np.minimum(HALF, x), SV5),
    "where traced branches": (lambda p: np.where(MASK5, p[0], p[1]), (SV, V2)),
    "where traced condition": (lambda x: np.where(x > 0.7, x**2, np.sin(x)), SV5 + 0.05),
    "where constant branch": (lambda x: np.where(MASK5, 2.0, x), SV),
    "where broadcast": (lambda x: np.where(MASK34, x, 0.0), C4),
    "clip": (lambda x: np.clip(x, 0.5, 0.9), SV5 + 0.05),
    "clip lower only": (lambda x: np.clip(x, 0.5, None), SV5 + 0.05),
    "clip upper only": (lambda x: np.clip(x, None, 0.9), SV5 + 0.05),
    "clip min= max=": (lambda x: np.clip(x, min=0.5, max=0.9), SV5 + 0.05),
}

REDUCTIONS = {}
for _name, _fun in {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min}.items():
    for _axis in (None, 0, 1, -1, (0, 2), (-1, 0)):
        for _keepdims in (False, True):
            REDUCTIONS[f"{_name} axis={_axis} keepdims={_keepdims}"] = (
                lambda x, f=_fun, a=_axis, k=_keepdims: f(x, axis=a, keepdims=k), SP)
REDUCTIONS.update({
    "np.amax": (lambda x: np.amax(x, axis=1), SP),
    "np.amin": (lambda x: np.amin(x), SP),
    "Box.sum": (lambda x: x.sum(axis=1), SP),
    "Box.mean": (lambda x: x.mean(), SP),
    "Box.max": (lambda x: x.max(axis=0, keepdims=True), SP),
    "Box.min": (lambda x: x.min(axis=(0, 1)), SP),
    "sum positional axis": (lambda x: np.sum(x, 1), SP),
    "max of 1-D": (lambda x: np.max(x), SV5),
})

A34, A45, A3D, B3D = (uniform(s, -1.0, 1.0, seed=30 + k)
                      for k, s in enumerate([(3, 4), (4, 5), (2, 3, 4), (2, 4, 5)]))
U3, U4 = uniform(3, -1.0, 1.0, seed=40), uniform(4, -1.0, 1.0, seed=41)

MATMUL_SHAPES = {  # both operands traced
    "1-D @ 1-D": (U4, U4[::-1].copy()),
    "2-D @ 1-D": (A34, U4),
    "1-D @ 2-D": (U3, A34),
    "2-D @ 2-D": (A34, A45),
    "3-D @ 3-D": (A3D, B3D),
    "3-D @ 2-D": (A3D, A45),
    "2-D @ 3-D": (A34, B3D),
    "3-D @ 1-D": (A3D, U4),
    "1-D @ 3-D": (U3, A3D),
}
LINALG = {f"matmul {k}": (lambda p: p[0] @ p[1], v) for k, v in MATMUL_SHAPES.items()}
LINALG.update({f"np.matmul {k}": (lambda p: np.matmul(p[0], p[1]), v)
               for k, v in MATMUL_SHAPES.items()})
LINALG.update({
    "ndarray @ traced": (lambda x: C34 @ x, U4),
    "traced @ ndarray": (lambda x: x @ C45, U4),
    "ndarray @ traced 2-D": (lambda x: C34 @ x, A45),
    "dot 1-D 1-D": (lambda p: np.dot(p[0], p[1]), (U4, U4[::-1].copy())),
    "dot 2-D 1-D": (lambda p: np.dot(p[0], p[1]), (A34, U4)),
    "dot 1-D 2-D": (lambda p: np.dot(p[0], p[1]), (U3, A34)),
    "dot 2-D 2-D": (lambda p: np.dot(p[0], p[1]), (A34, A45)),
    "dot scalar": (lambda x: np.dot(2.5, x), U4),
    "dot const first": (lambda x: np.dot(C34, x), U4),
    "Box.dot": (lambda p: p[0].dot(p[1]), (A34, A45)),
    "outer": (lambda p: np.outer(p[0], p[1]), (U3, U4)),
    "outer const": (lambda x: np.outer(C3, x), U4),
    "einsum ij,jk->ik": (lambda p: np.einsum("ij,jk->ik", p[0], p[1]), (A34, A45)),
    "einsum implicit ij,jk": (lambda p: np.einsum("ij,jk", p[0], p[1]), (A34, A45)),
    "einsum implicit ij,kj": (lambda p: np.einsum("ij,kj", p[0], p[1]), (A34, A34 + 1)),
    "einsum i,i->": (lambda p: np.einsum("i,i->", p[0], p[1]), (U4, C4 + U4)),
    "einsum same operand twice i,i->": (lambda x: np.einsum("i,i->", x, x), U4),
    "einsum ij->ji": (lambda x: np.einsum("ij->ji", x), A34),
    "einsum ij->": (lambda x: np.einsum("ij->", x), A34),
    "einsum ij->j": (lambda x: np.einsum("ij->j", x), A34),
    "einsum summed within one operand ij,k->i": (
        lambda p: np.einsum("ij,k->i", p[0], p[1]), (A34, U3)),
    "einsum summed within one operand ijk,k->j": (
        lambda p: np.einsum("ijk,k->j", p[0], p[1]), (A3D, U4)),
    "einsum batched bij,bjk->bik": (lambda p: np.einsum("bij,bjk->bik", p[0], p[1]),
                                    (A3D, B3D)),
    "einsum ij,ij->i": (lambda p: np.einsum("ij,ij->i", p[0], p[1]), (A34, M)),
    "einsum three operands i,ij,j->": (lambda p: np.einsum("i,ij,j->", p[0], p[1], p[2]),
                                       (U3, A34, U4)),
    "einsum with spaces": (lambda x: np.einsum("ij, j -> i", x, C4), A34),
    "einsum constant first operand": (lambda x: np.einsum("ij,jk->ik", C34, x), A45),
    "norm vector": (lambda x: np.linalg.norm(x), SV),
    "norm vector ord=2": (lambda x: np.linalg.norm(x, 2), SV),
    "norm Frobenius": (lambda x: np.linalg.norm(x), A34),
    "norm ord='fro'": (lambda x: np.linalg.norm(x, "fro"), A34),
    "norm axis=0": (lambda x: np.linalg.norm(x, axis=0), A34),
    "norm axis=-1": (lambda x: np.linalg.norm(x, axis=-1), A34),
    "norm axis=(1, 2)": (lambda x: np.linalg.norm(x, axis=(1, 2)), A3D),
    "norm axis=1 keepdims": (lambda x: np.linalg.norm(x, axis=1, keepdims=True), A34),
    "norm keepdims": (lambda x: np.linalg.norm(x, keepdims=True), A34),
})

SHAPES = {
    "np.reshape": (lambda x: np.reshape(x, (3, 4)), R26),
    "Box.reshape(3, 4)": (lambda x: x.reshape(3, 4), R26),
    "Box.reshape((3, 4))": (lambda x: x.reshape((3, 4)), R26),
    "Box.reshape(-1)": (lambda x: x.reshape(-1), T3),
    "Box.reshape(2, -1)": (lambda x: x.reshape(2, -1), T3),
    "reshape then matmul": (lambda x: np.sin(x.reshape(6, 4)) @ C4, T3),
    "np.transpose": (lambda x: np.transpose(x), T3),
    "np.transpose axes": (lambda x: np.transpose(x, (1, 2, 0)), T3),
    "Box.transpose()": (lambda x: x.transpose(), T3),
    "Box.transpose(1, 2, 0)": (lambda x: x.transpose(1, 2, 0), T3),
    "Box.transpose((1, 2, 0))": (lambda x: x.transpose((1, 2, 0)), T3),
    ".T": (lambda x: x.T @ C3, C34),
    "np.ravel": (lambda x: np.ravel(x), T3),
    "Box.ravel": (lambda x: x.ravel(), T3),
    "Box.flatten": (lambda x: x.flatten(), T3),
    "np.squeeze": (lambda x: np.squeeze(x), M[:, None, :1]),
    "np.squeeze axis": (lambda x: np.squeeze(x, axis=1), M[:, None, :]),
    "Box.squeeze": (lambda x: x.squeeze(), M[:, None, :]),
    "np.expand_dims 0": (lambda x: np.expand_dims(x, 0) * C34, C4),
    "np.expand_dims -1": (lambda x: np.expand_dims(x, -1) * C34, C3),
    "np.broadcast_to (4,)->(3,4)": (lambda x: np.broadcast_to(x, (3, 4)) * C34, C4),
    "np.broadcast_to (3,1)->(3,4)": (lambda x: np.broadcast_to(x, (3, 4)) * C34, M[:, :1]),
    "np.concatenate": (lambda p: np.concatenate([p[0], C3, p[1]]), (SV, U4)),
    "np.concatenate axis=1": (lambda p: np.concatenate([p[0], p[1]], axis=1), (A34, M)),
    "np.concatenate axis=-1": (lambda p: np.concatenate((p[0], C34), axis=-1), (A34,)),
    "np.concatenate axis=0 2-D": (lambda p: np.concatenate([p[0], p[1]]), (A34, A45.T)),
    "np.stack": (lambda p: np.stack([p[0], C4, p[1]]), (U4, C4 + 1)),
    "np.stack axis=1": (lambda p: np.stack([p[0], p[1]], axis=1), (A34, M)),
    "np.stack axis=-1": (lambda p: np.stack([p[0], p[1]], axis=-1), (A34, M)),
}

INDEXING = {
    "int": (lambda x: x[2], SV),
    "negative int": (lambda x: x[-1] * x[0], SV),
    "slice": (lambda x: x[1:4], SV),
    "negative step": (lambda x: x[::-2], SV),
    "row": (lambda x: x[1], A34),
    "column": (lambda x: x[:, 2], A34),
    "element": (lambda x: x[1, 2] * x[0, 0], A34),
    "ellipsis": (lambda x: x[..., 0], A3D),
    "newaxis": (lambda x: x[None, :] * C34[:, :1], U4),
    "boolean mask": (lambda x: x[MASK5], SV),
    "boolean mask 2-D": (lambda x: x[MASK34], A34),
    "mask from the traced value": (lambda x: x[x > 0], SV),
    "fancy repeated": (lambda x: x[REPEATED], SV),
    "fancy list repeated": (lambda x: x[[0, 2, 2, 1]], SV),
    "fancy negative repeated": (lambda x: x[np.array([-1, -1, 0, 4])], SV),
    "fancy 2-D rows repeated": (lambda x: x[np.array([0, 0, 2])], A34),
    "fancy pairs repeated": (lambda x: x[np.array([0, 0, 1]), np.array([3, 3, 2])], A34),
    "slice and fancy repeated": (lambda x: x[1:, np.array([0, 3, 0])], A34),
    "boolean mask and fancy": (lambda x: x[MASK34[:, 0], :][:, np.array([1, 1])], A34),
    "fancy 2-D index array": (lambda x: x[np.array([[0, 1], [1, 4]])], SV),
}


def _params(table, prefix=""):
    return [pytest.param(fun, x, id=prefix + name) for name, (fun, x) in table.items()]


ALL_CASES = (
    [pytest.param(u, x, id=name) for name, (u, x) in UNARY_UFUNCS.items()]
    + _params(ARITHMETIC) + _params(BINARY_UFUNCS) + _params(REDUCTIONS)
    + _params(LINALG) + _params(SHAPES) + _params(INDEXING, "index ")
)


@pytest.mark.parametrize(("fun", "x"), ALL_CASES)
def test_gradient(fun, x):
    assert_gradient(lambda x: scalarise(fun(x)), x)


@pytest.mark.parametrize(("fun", "x"), ALL_CASES)
def test_hessian_vector_product(fun, x):
    """Every rule is itself traced: ``x ↦ ⟨∇f(x), v⟩`` has the right gradient ``H v``.

    The Taylor remainder of ``⟨∇f, v⟩`` along ``h`` starts with a third derivative
    ``∇³f[v, h, h] / 2`` of either sign, which can nearly cancel; a small first step keeps
    the next term from masking it.
    """
    def f(x):
        return scalarise(fun(x))

    direction = _direction_like(x)

    def slope(x):
        g = grad(f)(x)
        return sum(np.sum(a * b) for a, b in zip(_leaves(g), _leaves(direction),
                                                  strict=True))

    assert_gradient(slope, x, step=1e-4)


def _leaves(x):
    return list(x) if isinstance(x, tuple) else [x]


def _direction_like(x, seed=99):
    if isinstance(x, tuple):
        return tuple(_direction_like(item, seed + k) for k, item in enumerate(x))
    return normal(np.shape(x), seed) if np.ndim(x) else 0.7


# ------------------------------------------------------------------ closed forms
def test_repeated_fancy_indices_accumulate():
    w = normal(REPEATED.size, seed=50)
    g = grad(lambda x: np.sum(w * x[REPEATED]))(SV)
    expected = np.bincount(REPEATED, weights=w, minlength=SV.size)
    assert np.allclose(g, expected, rtol=1e-15, atol=0)
    assert g[2] == pytest.approx(w[1] + w[2] + w[5], rel=1e-15)


def test_repeated_negative_fancy_indices_accumulate():
    index = np.array([-1, 4, 0, -5])  # -1 and 4 are the same entry, so are 0 and -5
    w = normal(index.size, seed=51)
    g = grad(lambda x: np.sum(w * x[index]))(SV)
    assert np.allclose(g, [w[2] + w[3], 0.0, 0.0, 0.0, w[0] + w[1]], rtol=1e-15)


def test_repeated_index_pairs_accumulate():
    rows, cols = np.array([0, 0, 1, 0]), np.array([3, 3, 2, 1])
    w = normal(4, seed=52)
    g = grad(lambda x: np.sum(w * x[rows, cols]))(A34)
    expected = np.zeros((3, 4))
    expected[0, 3], expected[1, 2], expected[0, 1] = w[0] + w[1], w[2], w[3]
    assert np.allclose(g, expected, rtol=1e-15, atol=0)


def test_ties_of_max_share_the_cotangent():
    assert np.allclose(grad(np.max)(np.array([1.0, 3.0, 3.0, 2.0])), [0, 0.5, 0.5, 0])
    x = np.array([[1.0, 5.0], [5.0, 2.0]])
    assert np.allclose(grad(lambda x: np.sum(np.max(x, axis=1)))(x), [[0, 1], [1, 0]])


def test_comparisons_return_plain_booleans_and_carry_no_gradient():
    results = {}

    def f(x):
        results.update({
            "<": x < 1.0, "<=": x <= 1.0, ">": x > 1.0, ">=": x >= 1.0,
            "==": x == C5, "!=": x != C5,
            "float < box": 1.0 < x,  # noqa: SIM300 - the reflected comparison
            "ndarray < box": C5 < x,  # noqa: SIM300 - numpy's comparison ufunc
            "np.less": np.less(x, 1.0),
            "np.greater_equal": np.greater_equal(C5, x), "box < box": x < 2.0 * x,
            "np.isfinite": np.isfinite(x),
        })
        return np.sum(np.where(x > 1.0, x**2, 0.0))

    g = grad(f)(V)
    for name, value in results.items():
        assert type(value) is np.ndarray and value.dtype == bool, name
    assert np.array_equal(results["<"], V < 1.0)
    assert np.array_equal(results["ndarray < box"], C5 < V)
    assert np.array_equal(results["np.greater_equal"], C5 >= V)
    assert np.array_equal(g, np.where(V > 1.0, 2.0 * V, 0.0))


def test_comparison_of_a_traced_scalar_is_a_bool():
    seen = []

    def f(x):
        seen.append(x > 1.0)
        return x * x if x > 1.0 else -x

    assert grad(f)(3.0) == 6.0
    assert grad(f)(0.5) == -1.0
    assert all(isinstance(s, bool | np.bool_) for s in seen)


def test_sign_has_zero_gradient():
    assert np.array_equal(grad(lambda x: np.sum(np.sign(x) * x))(SV), np.sign(SV))
