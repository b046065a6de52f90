"""Operator-level AD: trace array operations, apply hand-derived VJP rules (reverse mode)
and JVP rules (forward mode: ``jvp`` and derivatives of functions of one number).

>>> import numpy as np
>>> from fesens.ad import grad
>>> grad(lambda x: np.sum(np.sin(x) ** 2))(np.array([0.1, 0.2]))  # doctest: +SKIP
"""

from fesens.ad.api import grad, jvp, value_and_grad, vjp
from fesens.ad.checks import GradientCheck, TaylorResult, check_grad, check_gradient, taylor_test
from fesens.ad.hessian import hvp, value_grad_hvp
from fesens.ad.numpy_wrapper import getval, stop_gradient
from fesens.ad.registry import (
    NotDifferentiableError,
    defjvp,
    defjvp_argnum,
    defjvp_linear,
    defvjp,
    defvjp_argnum,
    defvjp_joint,
)
from fesens.ad.sparse import PatternMatrix, SparsePattern, matvec, solve, sparse_matrix
from fesens.ad.special_vjps import logsumexp, polygamma
from fesens.ad.tracer import Box, primitive

__all__ = [
    "Box",
    "GradientCheck",
    "NotDifferentiableError",
    "PatternMatrix",
    "SparsePattern",
    "TaylorResult",
    "check_grad",
    "check_gradient",
    "defjvp",
    "defjvp_argnum",
    "defjvp_linear",
    "defvjp",
    "defvjp_argnum",
    "defvjp_joint",
    "getval",
    "grad",
    "hvp",
    "jvp",
    "logsumexp",
    "matvec",
    "polygamma",
    "primitive",
    "solve",
    "sparse_matrix",
    "stop_gradient",
    "taylor_test",
    "value_and_grad",
    "value_grad_hvp",
    "vjp",
]
