"""One table of (function, sample input) for the traced numpy, numpy.linalg and
scipy.special functions; every row gets a Taylor test with central differences, and a
check that forward mode agrees with reverse mode (``⟨w, J v⟩ = ⟨Jᵀ w, v⟩``), in forward mode
proper (dual numbers) for every row whose primitives have JVP rules.

Adding a rule is adding a row. Inputs stay away from kinks and ties (``abs``, ``max``,
``sort``), inside domains (``arcsin``, ``logit``) and have distinct eigenvalues (``eigh``);
``cholesky`` and ``eigh`` read one triangle, so their rows symmetrise the input first.
A tuple input differentiates with respect to all its entries.
"""

import numpy as np
import pytest
import scipy.special as sc
from ad_helpers import assert_gradient, normal, scalarise, signed, spaced, uniform

import fesens.ad
from fesens.ad import grad, jvp, vjp
from fesens.ad.pytree import flatten

SV = signed(5, seed=1)  # no entry near 0
V = uniform(5, 0.5, 1.5, seed=2)  # positive
V2 = uniform(5, 0.5, 1.5, seed=3)
UNIT = uniform(5, -0.8, 0.8, seed=4)  # inside (-1, 1)
PROB = uniform(5, 0.1, 0.9, seed=5)  # inside (0, 1)
DISTINCT = spaced(6, seed=6)  # distinct values 0.5, 0.6, ... shuffled
M = uniform((3, 4), 0.5, 1.5, seed=7)
SM = signed((3, 4), seed=8)
D34 = spaced((3, 4), seed=9)  # distinct, well separated: sort and extrema keep their order
T3 = normal((2, 3, 4), seed=10)
A = np.eye(4) + 0.25 * normal((4, 4), seed=11)  # well conditioned
AS = np.eye(3) + 0.2 * normal((2, 3, 3), seed=12)  # a stack
B = normal(4, seed=13)
SEPARATED = np.diag([3.0, 2.0, 1.2, 0.5]) + 0.1 * normal((4, 4), seed=17)  # singular values
C23 = normal((2, 3), seed=14)
NON_FINITE = np.array([0.0, np.nan, 0.0, np.inf, 0.0])
IDX = np.argsort(normal((3, 4), seed=15), axis=1)[:, :3]


def _sym(m):
    """``(M + Mᵀ)/2 + 3 I``: symmetric positive definite, distinct eigenvalues here."""
    return 0.5 * (m + np.swapaxes(m, -1, -2)) + 3.0 * np.eye(np.shape(m)[-1])


def _weighted(pieces, axis):
    """The pieces of a split joined back, each scaled by its position (1, 2, ...)."""
    return np.concatenate([(k + 1.0) * p for k, p in enumerate(pieces)], axis=axis)


RULES = {
    # ---------------------------------------------------------------- elementwise
    "arcsin": (np.arcsin, UNIT), "arccos": (np.arccos, UNIT), "arcsinh": (np.arcsinh, SV),
    "arccosh": (np.arccosh, V + 1.0), "arctanh": (np.arctanh, UNIT), "exp2": (np.exp2, SV),
    "log2": (np.log2, V), "log10": (np.log10, V), "fabs": (np.fabs, SV),
    "deg2rad": (np.deg2rad, SV), "rad2deg": (np.rad2deg, SV), "degrees": (np.degrees, SV),
    "radians": (np.radians, SV),
    "logaddexp": (lambda p: np.logaddexp(p[0], p[1]), (SV, V)),
    "logaddexp2": (lambda p: np.logaddexp2(p[0], p[1]), (SV, V)),
    "hypot": (lambda p: np.hypot(p[0], p[1]), (SV, V)),
    "fmax": (lambda x: np.fmax(x, DISTINCT[::-1]), DISTINCT),
    "fmin": (lambda x: np.fmin(x, DISTINCT[::-1]), DISTINCT),
    # ---------------------------------------------------------------- cumulative, reductions
    "cumsum": (np.cumsum, M), "cumsum axis": (lambda x: np.cumsum(x, axis=1), M),
    "cumprod": (np.cumprod, V), "cumprod axis": (lambda x: np.cumprod(x, axis=0), M),
    "prod": (np.prod, V), "prod axis keepdims": (lambda x: np.prod(x, 0, keepdims=True), M),
    "diff": (np.diff, SV), "diff n=2 axis 0": (lambda x: np.diff(x, 2, axis=0), T3[0]),
    "diff prepend": (lambda x: np.diff(x, prepend=0.5), SV),
    "var": (np.var, SM), "var axis ddof": (lambda x: np.var(x, axis=1, ddof=1), SM),
    "std": (lambda x: np.std(x, axis=0, keepdims=True), SM),
    "logsumexp": (fesens.ad.logsumexp, SM),
    "logsumexp axis": (lambda x: fesens.ad.logsumexp(x, axis=1), SM),
    "logsumexp keepdims": (lambda x: fesens.ad.logsumexp(x, 0, True), SM),
    # ---------------------------------------------------------------- ordering and building
    "sort": (np.sort, D34), "sort axis 0": (lambda x: np.sort(x, axis=0), D34),
    "sort flat": (lambda x: np.sort(x, axis=None), D34),
    "take_along_axis": (lambda x: np.take_along_axis(x, IDX, axis=1), M),
    "take_along_axis repeated": (lambda x: np.take_along_axis(x, np.zeros((1, 4), int), 0), M),
    "flip": (np.flip, M), "flip axis": (lambda x: np.flip(x, 1), M),
    "fliplr": (np.fliplr, M), "flipud": (np.flipud, M),
    "roll": (lambda x: np.roll(x, 2), M), "roll axis": (lambda x: np.roll(x, -1, axis=1), M),
    "roll axes": (lambda x: np.roll(x, (1, 2), axis=(0, 1)), M),
    "pad": (lambda x: np.pad(x, 1), M),
    "pad widths value": (lambda x: np.pad(x, ((0, 2), (1, 0)), constant_values=0.5), M),
    "tile": (lambda x: np.tile(x, 3), SV), "tile 2d": (lambda x: np.tile(x, (2, 1, 2)), M),
    "repeat": (lambda x: np.repeat(x, 2), M),
    "repeat axis": (lambda x: np.repeat(x, 3, axis=1), M),
    "repeat counts": (lambda x: np.repeat(x, [1, 0, 2], axis=0), M),
    "kron": (lambda p: np.kron(p[0], p[1]), (M, C23)), "kron 1d": (lambda x: np.kron(x, x), SV),
    "diagonal": (np.diagonal, M), "diagonal offset": (lambda x: np.diagonal(x, -1), M),
    "diagonal axes": (lambda x: np.diagonal(x, 0, 1, 2), T3),
    "trace": (np.trace, M), "trace offset": (lambda x: np.trace(x, 1), M),
    "triu": (np.triu, M), "tril": (lambda x: np.tril(x, -1), M),
    "moveaxis": (lambda x: np.moveaxis(x, 0, -1), T3),
    "swapaxes": (lambda x: np.swapaxes(x, 0, 2), T3),
    "tensordot": (lambda p: np.tensordot(p[0], p[1], 1), (M, normal((4, 2), 16))),
    "tensordot axes": (lambda p: np.tensordot(p[0], p[1], ([1, 2], [0, 1])), (T3, M)),
    "inner": (lambda p: np.inner(p[0], p[1]), (M, SM)),
    "atleast_1d": (lambda x: np.atleast_1d(np.sum(x)), SV),
    "atleast_2d": (np.atleast_2d, SV), "atleast_3d": (np.atleast_3d, M),
    "partition": (lambda x: np.partition(x, 2, axis=1), D34),
    "split": (lambda x: _weighted(np.split(x, 2, axis=1), 1), M),
    "array_split": (lambda x: _weighted(np.array_split(x, [1, 4]), 0), SV),
    "hsplit": (lambda x: _weighted(np.hsplit(x, [1, 3]), 1), M),
    "vsplit": (lambda x: _weighted(np.vsplit(x, 3), 0), M),
    "dsplit": (lambda x: _weighted(np.dsplit(x, 2), 2), T3),
    "rot90": (np.rot90, M), "rot90 k=3": (lambda x: np.rot90(x, 3, (1, 0)), M),
    "diag of a matrix": (lambda x: np.diag(x, 1), M),
    "diag of a vector": (lambda x: np.diag(x, -2), SV),
    "nan_to_num": (lambda x: np.nan_to_num(x + NON_FINITE, posinf=2.0), SV),
    "sinc": (np.sinc, np.append(SV, 0.0)),
    "gradient": (np.gradient, SV),
    "gradient axes spacing": (lambda x: np.concatenate(np.gradient(x, 0.5, 2.0)), M),
    "gradient edge_order 2": (lambda x: np.gradient(x, axis=1, edge_order=2), M),
    "array methods": (lambda x: np.concatenate([
        x.cumsum(1), x.cumprod(0), x.prod(1, keepdims=True), x.var(1, keepdims=True),
        x.std(1, ddof=1, keepdims=True), x.repeat(2, 1), x.swapaxes(0, 1).T,
        x.clip(0.7, 1.2)], 1), M),
    "array method diagonal": (lambda x: x.diagonal(1), M),
    "remainder": (lambda p: np.remainder(p[0], p[1]), (V + 2.0, V)),
    "mod": (lambda x: np.mod(x, 0.7), V),
    # ---------------------------------------------------------------- numpy.linalg
    "solve": (lambda p: np.linalg.solve(p[0], p[1]), (A, B)),
    "inv": (np.linalg.inv, A), "det": (np.linalg.det, A),
    "slogdet": (lambda x: np.linalg.slogdet(x)[1], A),
    "slogdet stack": (lambda x: np.linalg.slogdet(x).logabsdet, AS),
    "cholesky": (lambda x: np.linalg.cholesky(_sym(x)), A),
    "cholesky stack upper": (lambda x: np.linalg.cholesky(_sym(x), upper=True), AS),
    "eigh values": (lambda x: np.linalg.eigh(_sym(x))[0], A),
    # v ↦ v² does not see the sign LAPACK picks for each eigenvector
    "eigh vectors": (lambda x: np.linalg.eigh(_sym(x)).eigenvectors ** 2, A),
    "eigh stack": (lambda x: np.linalg.eigh(_sym(x))[1] ** 2, AS),
    "eigvalsh": (lambda x: np.linalg.eigvalsh(_sym(x)), AS),
    "svd values": (lambda x: np.linalg.svd(x, compute_uv=False), M),
    # U and Vh squared do not see the sign of each singular pair
    "svd square": (lambda x: np.linalg.svd(x)[0] ** 2 + np.linalg.svd(x).Vh ** 2, SEPARATED),
    "svd tall": (lambda x: np.linalg.svd(x, full_matrices=False)[0] ** 2, M.T),
    "svd wide stack": (lambda x: np.linalg.svd(x, full_matrices=False).Vh ** 2, T3),
    "svd values stack": (lambda x: np.linalg.svd(x, full_matrices=False)[1], T3),
    "pinv": (np.linalg.pinv, M), "pinv tall": (np.linalg.pinv, M.T),
    "norm 2 of a matrix": (lambda x: np.linalg.norm(x, 2), M),
    "norm -2": (lambda x: np.linalg.norm(x, -2), M),
    "norm nuc": (lambda x: np.linalg.norm(x, "nuc"), M),
    "norm nuc axes keepdims": (lambda x: np.linalg.norm(x, "nuc", (2, 0), True), T3),
    "norm 1": (lambda x: np.linalg.norm(x, 1), SV),
    "norm 2": (lambda x: np.linalg.norm(x, 2), SV),
    "norm inf": (lambda x: np.linalg.norm(x, np.inf), DISTINCT),
    "norm -inf": (lambda x: np.linalg.norm(x, -np.inf), DISTINCT),
    "norm p=3": (lambda x: np.linalg.norm(x, 3), SV),
    "norm p=0.5": (lambda x: np.linalg.norm(x, 0.5), V),
    "norm fro": (lambda x: np.linalg.norm(x, "fro"), SM),
    "norm matrix 1": (lambda x: np.linalg.norm(x, 1), D34),
    "norm matrix inf": (lambda x: np.linalg.norm(x, np.inf), D34),
    "norm matrix -1 keepdims": (lambda x: np.linalg.norm(x, -1, keepdims=True), D34),
    "norm axis": (lambda x: np.linalg.norm(x, axis=1), SM),
    "norm axis p=3": (lambda x: np.linalg.norm(x, 3, axis=0), SM),
    "norm axis inf keepdims": (lambda x: np.linalg.norm(x, np.inf, 1, True), D34),
    "norm stack fro": (lambda x: np.linalg.norm(x, axis=(1, 2)), T3),
    "matrix_power": (lambda x: np.linalg.matrix_power(x, 3), A),
    "matrix_power -2": (lambda x: np.linalg.matrix_power(x, -2), A),
    "multi_dot": (lambda x: np.linalg.multi_dot([x, A, x]), A),
    # ---------------------------------------------------------------- scipy.special
    "expit": (sc.expit, SV), "logit": (sc.logit, PROB), "erf": (sc.erf, SV),
    "erfc": (sc.erfc, SV), "erfinv": (sc.erfinv, UNIT), "erfcinv": (sc.erfcinv, PROB + 0.5),
    "gamma": (sc.gamma, V + 0.5), "gammaln": (sc.gammaln, V), "digamma": (sc.digamma, V),
    "psi": (sc.psi, V), "polygamma": (lambda x: fesens.ad.polygamma(2, x), V),
    "xlogy": (lambda p: sc.xlogy(p[0], p[1]), (SV, V)),
    "xlog1py": (lambda p: sc.xlog1py(p[0], p[1]), (SV, V)),
    "rgamma": (sc.rgamma, V + 0.5),
    "gammainc": (lambda x: sc.gammainc(1.5, x), V), "gammaincc": (lambda x: sc.gammaincc(V2, x), V),
    "j0": (sc.j0, V), "j1": (sc.j1, V), "y0": (sc.y0, V), "y1": (sc.y1, V), "i0": (sc.i0, SV),
    "i1": (sc.i1, SV), "i0e": (sc.i0e, SV), "i1e": (sc.i1e, SV),
    "jv": (lambda x: sc.jv(1.5, x), V), "yv": (lambda x: sc.yv(V2, x), V),
    "iv": (lambda x: sc.iv(2.0, x), SV),
}


@pytest.mark.parametrize(("fun", "x"), RULES.values(), ids=RULES.keys())
def test_taylor_and_central_differences(fun, x):
    assert_gradient(lambda x: scalarise(fun(x)), x)


def _dot(a, b) -> float:
    return sum(float(np.sum(p * q)) for p, q in zip(flatten(a)[0], flatten(b)[0], strict=True))


@pytest.mark.parametrize(("fun", "x"), RULES.values(), ids=RULES.keys())
def test_forward_mode_is_the_transpose_of_reverse_mode(fun, x):
    leaves, unflatten = flatten(x)
    v = unflatten([normal(np.shape(leaf), seed=20 + k) for k, leaf in enumerate(leaves)])
    value, pullback = vjp(fun, x)
    weights = normal(np.shape(value), seed=30)
    _, tangent = jvp(fun, (x,), (v,))
    assert np.isclose(_dot(weights, tangent), _dot(pullback(weights), v), rtol=1e-10,
                      atol=1e-12)
    assert np.allclose(value, fun(x))


# Rows whose third derivatives are large at the default first step (rates above 2.1 that
# settle to 2.00 from a step of 1e-4)
SECOND_ORDER_STEP = {"tensordot axes": 1e-4, "svd square": 1e-4, "sinc": 1e-4}


@pytest.mark.parametrize(("name", "fun", "x"), [(k, *v) for k, v in RULES.items()],
                         ids=RULES.keys())
def test_second_derivatives_through_the_rules(name, fun, x):
    """``x ↦ ∇J(x)·v`` differentiated again (nested ``grad``): the rules themselves are
    traced, so Hessian-vector products pass the Taylor test too."""
    leaves, unflatten = flatten(x)
    v = unflatten([normal(np.shape(leaf), seed=40 + k) for k, leaf in enumerate(leaves)])
    slope = grad(lambda x: scalarise(fun(x)))
    assert_gradient(lambda x: sum(np.sum(p * q) for p, q in zip(
        flatten(slope(x))[0], flatten(v)[0], strict=True)), x,
        step=SECOND_ORDER_STEP.get(name))


# Rows whose primitives have no JVP rule yet: jvp gives way to reverse mode (the VJP of the
# pullback) for them. Every other row runs in forward mode; a rule lost or broken shows here.
REVERSE_ONLY = {
    "cumprod", "cumprod axis", "prod", "prod axis keepdims", "array methods", "cholesky",
    "cholesky stack upper", "eigh values", "eigh vectors", "eigh stack", "eigvalsh",
    "svd values", "svd square", "svd tall", "svd wide stack", "svd values stack", "pinv",
    "pinv tall", "norm 2 of a matrix", "norm -2", "norm nuc", "norm nuc axes keepdims",
}


@pytest.mark.parametrize(("name", "row"), RULES.items(), ids=RULES.keys())
def test_rows_with_jvp_rules_run_in_forward_mode(name, row):
    from fesens.ad.api import _forward_jvp

    fun, x = row
    leaves, unflatten = flatten(x)
    v = unflatten([normal(np.shape(leaf), seed=40 + k) for k, leaf in enumerate(leaves)])
    forward = _forward_jvp(fun, (x,), (v,))
    assert (forward is None) == (name in REVERSE_ONLY)
