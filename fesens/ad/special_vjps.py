"""``scipy.special`` functions of the traced subset: their primitives and VJP rules.

The ufuncs (``expit``, ``logit``, ``erf``, ``erfc``, ``erfinv``, ``erfcinv``, ``gamma``,
``rgamma``, ``gammaln``, ``digamma``/``psi``, ``gammainc``/``gammaincc`` (in ``x``),
``xlogy``, ``xlog1py``, the Bessel functions ``j0``, ``j1``, ``y0``, ``y1``, ``i0``, ``i1``,
``i0e``, ``i1e`` and ``jv``, ``yv``, ``iv`` (in ``x``)) dispatch from a traced argument
like numpy's. ``logsumexp`` and ``polygamma`` are Python functions in scipy that a traced
value cannot enter, so code that differentiates them calls ``fesens.ad.logsumexp`` and
``fesens.ad.polygamma`` (defined here) instead. Derivatives from DLMF
(https://dlmf.nist.gov): 7.2 and 7.10 (erf), 5.15 (ψ, polygamma), 5.2 (Γ), 8.8
(incomplete Γ), 10.6 and 10.29 (Bessel).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special as sc

from fesens.ad.dispatch import register_ufunc
from fesens.ad.numpy_vjps import _expand, _unbroadcast_like
from fesens.ad.registry import defjvp, defvjp
from fesens.ad.tracer import primitive

expit = primitive(sc.expit, "expit")
logit = primitive(sc.logit, "logit")
erf = primitive(sc.erf, "erf")
erfc = primitive(sc.erfc, "erfc")
erfinv = primitive(sc.erfinv, "erfinv")
erfcinv = primitive(sc.erfcinv, "erfcinv")
gamma = primitive(sc.gamma, "gamma")
gammaln = primitive(sc.gammaln, "gammaln")
digamma = primitive(sc.digamma, "digamma")
xlogy = primitive(sc.xlogy, "xlogy")
xlog1py = primitive(sc.xlog1py, "xlog1py")
rgamma = primitive(sc.rgamma, "rgamma")
gammainc = primitive(sc.gammainc, "gammainc")
gammaincc = primitive(sc.gammaincc, "gammaincc")
BESSEL = {name: primitive(getattr(sc, name), name)
          for name in ("j0", "j1", "y0", "y1", "i0", "i1", "i0e", "i1e", "jv", "yv", "iv")}


@primitive
def polygamma(n, x):
    """``ψ⁽ⁿ⁾(x)``, the n-th derivative of the digamma function (``n`` a constant)."""
    return sc.polygamma(n, x)


@primitive
def logsumexp(a, axis=None, keepdims=False):
    """``log Σ exp(a)`` over ``axis``, computed stably (``scipy.special.logsumexp``)."""
    return sc.logsumexp(a, axis=axis, keepdims=keepdims)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

def _elementwise(prim, derivative, uses_ans: bool = True) -> None:
    """Register ``x̄ = g f'(x)`` and the tangent ``f'(x) t`` from ``derivative(ans, x)``."""
    defvjp(prim, lambda ans, x: lambda g: g * derivative(ans, x), uses_ans=uses_ans)
    defjvp(prim, lambda t, ans, x: t * derivative(ans, x))


def _binary(prim, d_first, d_second) -> None:
    """Register the partial derivatives ``d(x, y)`` of a broadcasting binary function
    (``None``: no rule for that argument), for reverse and forward mode."""
    for argnum, d in enumerate((d_first, d_second)):
        if d is not None:
            defvjp(prim, lambda ans, x, y, d=d, i=argnum: lambda g: _unbroadcast_like(
                g * d(x, y), (x, y)[i]), argnums=(argnum,), uses_ans=False)
            defjvp(prim, lambda t, ans, x, y, d=d: t * d(x, y), argnums=(argnum,))


# σ'(x) = σ(x)(1 − σ(x)); logit'(p) = 1 / (p (1 − p))
_elementwise(expit, lambda ans, x: ans * (1.0 - ans))
_elementwise(logit, lambda ans, x: 1.0 / (x * (1.0 - x)), uses_ans=False)
# DLMF 7.10.1: erf'(x) = 2/√π e^(−x²), erfc' = −erf'; inverses: 1 / f'(f⁻¹(y))
_elementwise(erf, lambda ans, x: _TWO_OVER_SQRT_PI * np.exp(-x * x), uses_ans=False)
_elementwise(erfc, lambda ans, x: -_TWO_OVER_SQRT_PI * np.exp(-x * x), uses_ans=False)
_elementwise(erfinv, lambda ans, x: np.exp(ans * ans) / _TWO_OVER_SQRT_PI)
_elementwise(erfcinv, lambda ans, x: -np.exp(ans * ans) / _TWO_OVER_SQRT_PI)
# DLMF 5.15.1: (log Γ)' = ψ, Γ' = Γ ψ, ψ⁽ⁿ⁾' = ψ⁽ⁿ⁺¹⁾
_elementwise(gamma, lambda ans, x: ans * digamma(x))
_elementwise(gammaln, lambda ans, x: digamma(x), uses_ans=False)
_elementwise(digamma, lambda ans, x: polygamma(1, x), uses_ans=False)
defvjp(polygamma, None, lambda ans, n, x: lambda g: g * polygamma(n + 1, x), uses_ans=False)
defjvp(polygamma, None, lambda t, ans, n, x: t * polygamma(n + 1, x))
_elementwise(rgamma, lambda ans, x: -ans * digamma(x))
# DLMF 8.8.13: ∂/∂x P(a, x) = x^(a−1) e^(−x) / Γ(a) (no rule in the order a); Q = 1 − P
_binary(gammainc, None, lambda a, x: np.exp((a - 1.0) * np.log(x) - x - gammaln(a)))
_binary(gammaincc, None, lambda a, x: -np.exp((a - 1.0) * np.log(x) - x - gammaln(a)))
# Bessel functions, DLMF 10.6.2 and 10.29.2: J₀' = −J₁, J₁' = J₀ − J₁/x (Y alike),
# I₀' = I₁, I₁' = I₀ − I₁/x; scaled Iₙe(x) = e^(−|x|) Iₙ(x) adds −sign(x) Iₙe;
# in the order v: C_v' = (C_{v−1} − C_{v+1})/2 (J, Y), (I_{v−1} + I_{v+1})/2 (I)
_B = BESSEL
_elementwise(_B["j0"], lambda ans, x: -_B["j1"](x), uses_ans=False)
_elementwise(_B["j1"], lambda ans, x: _B["j0"](x) - ans / x)
_elementwise(_B["y0"], lambda ans, x: -_B["y1"](x), uses_ans=False)
_elementwise(_B["y1"], lambda ans, x: _B["y0"](x) - ans / x)
_elementwise(_B["i0"], lambda ans, x: _B["i1"](x), uses_ans=False)
_elementwise(_B["i1"], lambda ans, x: _B["i0"](x) - ans / x)
_elementwise(_B["i0e"], lambda ans, x: _B["i1e"](x) - np.sign(x) * ans)
_elementwise(_B["i1e"], lambda ans, x: _B["i0e"](x) - ans / x - np.sign(x) * ans)
for _name, _sign in (("jv", -1.0), ("yv", -1.0), ("iv", 1.0)):
    _binary(_B[_name], None, lambda v, x, f=_B[_name], sign=_sign:
            0.5 * (f(v - 1.0, x) + sign * f(v + 1.0, x)))
# xlogy(x, y) = x log y: ∂x = log y, ∂y = x / y; xlog1py(x, y) = x log(1 + y)
_binary(xlogy, lambda x, y: np.log(y), lambda x, y: x / y)
_binary(xlog1py, lambda x, y: np.log1p(y), lambda x, y: x / (1.0 + y))


# ∂/∂a log Σ eᵃ = softmax(a) = exp(a − ans)
def _softmax(ans, a, axis, keepdims):
    return np.exp(a - _expand(ans, np.shape(a), axis, keepdims))


defvjp(logsumexp, lambda ans, a, axis=None, keepdims=False: lambda g: _expand(
    g, np.shape(a), axis, keepdims) * _softmax(ans, a, axis, keepdims))
defjvp(logsumexp, lambda t, ans, a, axis=None, keepdims=False: np.sum(
    t * _softmax(ans, a, axis, keepdims), axis=axis, keepdims=keepdims))

for _ufunc in (expit, logit, erf, erfc, erfinv, erfcinv, gamma, gammaln, digamma, xlogy,
               xlog1py, rgamma, gammainc, gammaincc, *BESSEL.values()):
    register_ufunc(getattr(sc, _ufunc.__name__), _ufunc)
