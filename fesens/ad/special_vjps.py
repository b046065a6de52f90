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
from fesens.ad.registry import defvjp
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

# σ'(x) = σ(x)(1 − σ(x)); logit'(p) = 1 / (p (1 − p))
defvjp(expit, lambda ans, x: lambda g: g * (ans * (1.0 - ans)))
defvjp(logit, lambda ans, x: lambda g: g / (x * (1.0 - x)), uses_ans=False)
# DLMF 7.10.1: erf'(x) = 2/√π e^(−x²), erfc' = −erf'; inverses: 1 / f'(f⁻¹(y))
defvjp(erf, lambda ans, x: lambda g: g * (_TWO_OVER_SQRT_PI * np.exp(-x * x)), uses_ans=False)
defvjp(erfc, lambda ans, x: lambda g: g * (-_TWO_OVER_SQRT_PI * np.exp(-x * x)),
       uses_ans=False)
defvjp(erfinv, lambda ans, x: lambda g: g * (np.exp(ans * ans) / _TWO_OVER_SQRT_PI))
defvjp(erfcinv, lambda ans, x: lambda g: g * (-np.exp(ans * ans) / _TWO_OVER_SQRT_PI))
# DLMF 5.15.1: (log Γ)' = ψ, Γ' = Γ ψ, ψ⁽ⁿ⁾' = ψ⁽ⁿ⁺¹⁾
defvjp(gamma, lambda ans, x: lambda g: g * (ans * digamma(x)))
defvjp(gammaln, lambda ans, x: lambda g: g * digamma(x), uses_ans=False)
defvjp(digamma, lambda ans, x: lambda g: g * polygamma(1, x), uses_ans=False)
defvjp(polygamma, None, lambda ans, n, x: lambda g: g * polygamma(n + 1, x), uses_ans=False)
defvjp(rgamma, lambda ans, x: lambda g: g * (-ans * digamma(x)))
# DLMF 8.8.13: ∂/∂x P(a, x) = x^(a−1) e^(−x) / Γ(a) (no rule in the order a); Q = 1 − P
defvjp(gammainc, None, lambda ans, a, x: lambda g: _unbroadcast_like(
    g * np.exp((a - 1.0) * np.log(x) - x - gammaln(a)), x), uses_ans=False)
defvjp(gammaincc, None, lambda ans, a, x: lambda g: _unbroadcast_like(
    -g * np.exp((a - 1.0) * np.log(x) - x - gammaln(a)), x), uses_ans=False)
# Bessel functions, DLMF 10.6.2 and 10.29.2: J₀' = −J₁, J₁' = J₀ − J₁/x (Y alike),
# I₀' = I₁, I₁' = I₀ − I₁/x; scaled Iₙe(x) = e^(−|x|) Iₙ(x) adds −sign(x) Iₙe;
# in the order v: C_v' = (C_{v−1} − C_{v+1})/2 (J, Y), (I_{v−1} + I_{v+1})/2 (I)
_B = BESSEL
defvjp(_B["j0"], lambda ans, x: lambda g: -g * _B["j1"](x), uses_ans=False)
defvjp(_B["j1"], lambda ans, x: lambda g: g * (_B["j0"](x) - ans / x))
defvjp(_B["y0"], lambda ans, x: lambda g: -g * _B["y1"](x), uses_ans=False)
defvjp(_B["y1"], lambda ans, x: lambda g: g * (_B["y0"](x) - ans / x))
defvjp(_B["i0"], lambda ans, x: lambda g: g * _B["i1"](x), uses_ans=False)
defvjp(_B["i1"], lambda ans, x: lambda g: g * (_B["i0"](x) - ans / x))
defvjp(_B["i0e"], lambda ans, x: lambda g: g * (_B["i1e"](x) - np.sign(x) * ans))
defvjp(_B["i1e"], lambda ans, x: lambda g: g * (_B["i0e"](x) - ans / x - np.sign(x) * ans))
for _name, _sign in (("jv", -1.0), ("yv", -1.0), ("iv", 1.0)):
    defvjp(_B[_name], None, lambda ans, v, x, f=_B[_name], sign=_sign: lambda g:
           _unbroadcast_like(g * (0.5 * (f(v - 1.0, x) + sign * f(v + 1.0, x))), x),
           uses_ans=False)

# xlogy(x, y) = x log y: ∂x = log y, ∂y = x / y; xlog1py(x, y) = x log(1 + y)
defvjp(xlogy, lambda ans, x, y: lambda g: _unbroadcast_like(g * np.log(y), x),
       lambda ans, x, y: lambda g: _unbroadcast_like(g * x / y, y), uses_ans=False)
defvjp(xlog1py, lambda ans, x, y: lambda g: _unbroadcast_like(g * np.log1p(y), x),
       lambda ans, x, y: lambda g: _unbroadcast_like(g * x / (1.0 + y), y), uses_ans=False)
# ∂/∂a log Σ eᵃ = softmax(a) = exp(a − ans)
defvjp(logsumexp, lambda ans, a, axis=None, keepdims=False: lambda g: _expand(
    g, np.shape(a), axis, keepdims) * np.exp(a - _expand(ans, np.shape(a), axis, keepdims)))

for _ufunc in (expit, logit, erf, erfc, erfinv, erfcinv, gamma, gammaln, digamma, xlogy,
               xlog1py, rgamma, gammainc, gammaincc, *BESSEL.values()):
    register_ufunc(getattr(sc, _ufunc.__name__), _ufunc)
