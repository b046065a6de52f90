"""Adapters from fesens to the AD systems people already use.

``fesens.interop.jax.as_jax(fn)`` and ``fesens.interop.torch.as_torch(fn)`` wrap a fesens
function (a function of arrays written in fesens's traced numpy, such as
``x ↦ compliance(problem.solve(scale=x**3))``) as a JAX or PyTorch function whose gradient
is fesens's adjoint: one forward solve, its factorization reused by the backward. JAX and
PyTorch are optional (``pip install fesens[jax]``, ``fesens[torch]``); this package imports
neither, its two modules import one each.
"""

from fesens.interop._common import AdapterDtypeError, AdapterShapeError, AdapterWarning

__all__ = ["AdapterDtypeError", "AdapterShapeError", "AdapterWarning"]
