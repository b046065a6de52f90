"""A fesens function as a PyTorch function: a ``torch.autograd.Function``.

>>> from fesens.interop.torch import as_torch
>>> f = as_torch(lambda x: compliance(problem.solve(scale=x**3)))  # doctest: +SKIP
>>> f(torch.tensor(x, requires_grad=True)).backward()  # doctest: +SKIP

The forward runs fesens once under its tape (value and pullback, one solve) and keeps the
pullback on the autograd context; ``backward`` applies it, so the adjoint solve reuses the
forward factorization, and the tape is freed with the graph. fesens computes in float64 on
the CPU: float64 CPU tensors pass through without a copy; float32 (and float16, bfloat16)
tensors are converted to float64 with an :class:`~fesens.interop.AdapterWarning` naming
the dtype, and their gradients come back in their own dtype; tensors on another device
(CUDA) are copied to the CPU with a warning naming the device, and outputs and gradients
go back to it. Integer and complex tensors are refused with
:class:`~fesens.interop.AdapterDtypeError`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import torch

from fesens.ad.pytree import flatten
from fesens.interop._common import (
    AdapterDtypeError,
    AdapterWarning,
    check_output,
    dtype_problem,
    value_and_pullback,
)

_CONVERTED = (torch.float16, torch.bfloat16, torch.float32)


def _as_float64_cpu(tensor: torch.Tensor, where: str) -> np.ndarray:
    """A tensor leaf as a float64 numpy array (no copy for a float64 CPU tensor)."""
    if tensor.is_complex() or not tensor.is_floating_point():
        dtype = str(tensor.dtype).removeprefix("torch.")
        raise AdapterDtypeError(dtype_problem("c" if tensor.is_complex() else "i", dtype,
                                              where))
    if tensor.device.type != "cpu":
        warnings.warn(f"{where} is on {tensor.device}: fesens computes on the CPU, so it is "
                      "copied there (and the results back)", AdapterWarning, stacklevel=4)
    if tensor.dtype in _CONVERTED:
        warnings.warn(f"{where} has the dtype {str(tensor.dtype).removeprefix('torch.')}: "
                      "converted to float64 (fesens computes in float64; pass float64 "
                      "tensors to avoid the copy)", AdapterWarning, stacklevel=4)
    return tensor.detach().to(device="cpu", dtype=torch.float64).numpy()


def _tensor(array: np.ndarray) -> torch.Tensor:
    """A float64 tensor over ``array`` (copied if read-only, e.g. a frozen fesens array)."""
    return torch.from_numpy(np.require(array, dtype=np.float64, requirements="W"))


class _FesensFunction(torch.autograd.Function):
    """``forward(ctx, call, *tensors)``: ``call`` runs fesens on the numpy leaves."""

    @staticmethod
    def forward(ctx, call, *tensors):
        arrays = [_as_float64_cpu(t, f"input tensor {k} (shape {tuple(t.shape)})")
                  for k, t in enumerate(tensors)]
        outputs, pullback = call(arrays)
        ctx.pullback = pullback
        ctx.inputs = [(t.dtype, t.device) for t in tensors]
        device = tensors[0].device
        return tuple(_tensor(o).to(device) for o in outputs)

    @staticmethod
    def backward(ctx, *grad_outputs):
        g = [_as_float64_cpu(t, f"the cotangent of output {k}")
             for k, t in enumerate(grad_outputs)]
        grads = ctx.pullback(g)
        return (None, *(_tensor(c).to(device=device, dtype=dtype)
                        for c, (dtype, device) in zip(grads, ctx.inputs, strict=True)))


def as_torch(fn: Callable) -> Callable:
    """Wrap the fesens function ``fn`` as a PyTorch function with fesens's gradient.

    Parameters
    ----------
    fn : callable
        ``fn(*args)`` written in fesens's traced numpy; its arguments are tensors or
        dicts/lists/tuples of tensors (every tensor is differentiated; other leaves, such
        as Python numbers, are passed through as constants). It returns an array or
        dicts/lists/tuples of arrays.

    Returns
    -------
    callable
        Takes the arguments of ``fn`` with tensors, returns float64 tensors in the
        structure of ``fn``'s output; composes with ``.backward()``, ``torch.autograd.grad``
        and ``torch.autograd.gradcheck``.
    """
    name = getattr(fn, "__name__", "the function")

    def wrapped(*args):
        leaves, unflatten = flatten(args)
        where = [k for k, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
        if not where:
            raise TypeError(f"as_torch({name}) was called without tensor arguments")
        out_tree = []  # set by the forward: how to rebuild fn's output from its leaves

        def flat_fn(*arrays):
            filled = list(leaves)
            for k, array in zip(where, arrays, strict=True):
                filled[k] = array
            return fn(*unflatten(filled))

        def call(arrays):
            value, pull = value_and_pullback(flat_fn, arrays)
            value_leaves, rebuild = flatten(value)
            out_tree.append(rebuild)
            outputs = [check_output(v, None, f"output {k} of {name}")
                       for k, v in enumerate(value_leaves)]
            return outputs, lambda g: pull(rebuild(g))

        outputs = _FesensFunction.apply(call, *(leaves[k] for k in where))
        return out_tree[0](list(outputs))

    wrapped.__wrapped__ = fn
    wrapped.__name__ = f"as_torch({name})"
    wrapped.__doc__ = fn.__doc__
    return wrapped
