"""What both adapters check at the edge: dtypes, shapes, and one fesens VJP of a flat function.

Inside, fesens sees float64 numpy arrays only; the adapters convert at their edge (as
scikit-fem's ``skfem/io/meshio.py`` does for meshes) and refuse what they cannot convert
with an error naming the dtype or shape and the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from fesens.ad import vjp
from fesens.errors import FesensError, FesensWarning


class AdapterDtypeError(FesensError, TypeError):
    """An adapter was given an input of a dtype it cannot differentiate (integer, complex,
    or float32 where the adapter does not convert)."""


class AdapterShapeError(FesensError, ValueError):
    """An adapter's input or output does not have the shape it declared or was given."""


class AdapterWarning(FesensWarning):
    """An adapter converted an input (float32 to float64, a CUDA tensor to the CPU)."""


def dtype_problem(kind: str, name: str, where: str) -> str | None:
    """Why a leaf of numpy dtype kind ``kind`` (``"f"``, ``"i"``, ``"c"``, ...) and name
    ``name`` cannot be differentiated, or None for a real floating dtype."""
    if kind == "f":
        return None
    if kind in "biu":
        return (f"{where} has the integer dtype {name}: fesens differentiates real floating "
                "inputs only; convert it to float64")
    if kind == "c":
        return (f"{where} has the complex dtype {name}: fesens's gradients are real; pass "
                "the real and imaginary parts as two float64 inputs")
    return f"{where} has the dtype {name}, not a real floating dtype; convert it to float64"


def check_output(value, expected_shape: tuple[int, ...] | None, where: str) -> np.ndarray:
    """One output leaf of the fesens function as a float64 array, checked against the
    declared shape ``expected_shape`` (None: any shape)."""
    array = np.asarray(value, dtype=np.float64)
    if expected_shape is not None and array.shape != tuple(expected_shape):
        raise AdapterShapeError(
            f"{where} has shape {array.shape}, but out_shape declared {tuple(expected_shape)}; "
            "give out_shape the shape the function returns")
    return array


def value_and_pullback(flat_fn: Callable, leaves: Sequence[np.ndarray]):
    """Run ``flat_fn(*leaves)`` once under fesens's tape: ``(value, pullback)``.

    ``pullback(g)`` maps an output cotangent (structured like ``value``) to one float64
    array per leaf, shaped like the leaf. It keeps the tape, so the backward sweep reuses
    the forward solve's factorization.
    """
    value, pull = vjp(flat_fn, *leaves, argnums=tuple(range(len(leaves))))

    def pullback(g) -> list[np.ndarray]:
        return [np.asarray(c, dtype=np.float64).reshape(np.shape(leaf))
                for c, leaf in zip(pull(g), leaves, strict=True)]

    return value, pullback
