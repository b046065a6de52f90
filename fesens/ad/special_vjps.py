"""``scipy.special`` functions of the traced subset: their primitives and VJP rules.

The ufuncs (``expit``, ``logit``, ``erf``, ``erfc``, ``erfinv``, ``erfcinv``, ``gamma``,
``gammaln``, ``digamma``/``psi``, ``xlogy``, ``xlog1py``) dispatch from a traced argument
like numpy's. ``logsumexp`` and ``polygamma`` are Python functions in scipy that a traced
value cannot enter, so code that differentiates them calls ``fesens.ad.logsumexp`` and
``fesens.ad.polygamma`` (defined here) instead. Derivatives from DLMF
(https://dlmf.nist.gov): 7.2 and 7.10 (erf), 5.15 (ψ, polygamma), 5.2 (Γ).
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
# xlogy(x, y) = x log y: ∂x = log y, ∂y = x / y; xlog1py(x, y) = x log(1 + y)
defvjp(xlogy, lambda ans, x, y: lambda g: _unbroadcast_like(g * np.log(y), x),
       lambda ans, x, y: lambda g: _unbroadcast_like(g * x / y, y), uses_ans=False)
defvjp(xlog1py, lambda ans, x, y: lambda g: _unbroadcast_like(g * np.log1p(y), x),
       lambda ans, x, y: lambda g: _unbroadcast_like(g * x / (1.0 + y), y), uses_ans=False)
# ∂/∂a log Σ eᵃ = softmax(a) = exp(a − ans)
defvjp(logsumexp, lambda ans, a, axis=None, keepdims=False: lambda g: _expand(
    g, np.shape(a), axis, keepdims) * np.exp(a - _expand(ans, np.shape(a), axis, keepdims)))

for _ufunc in (expit, logit, erf, erfc, erfinv, erfcinv, gamma, gammaln, digamma, xlogy,
               xlog1py):
    register_ufunc(getattr(sc, _ufunc.__name__), _ufunc)
