"""A primitive of a named tree of inputs (fesens/ad/tree_primitive.py): its rule reads
which inputs are traced by name, its gradient passes a Taylor test and central
differences, and an untraced input is never asked for."""

from typing import NamedTuple

import numpy as np

from fesens.ad import check_grad, grad, taylor_test
from fesens.ad.tree_primitive import defvjp_tree, tree_primitive


class Inputs(NamedTuple):
    scale: np.ndarray
    vector: np.ndarray
    extra: tuple = ()


def _weighted(context, inputs):
    """``Σ_i scale_i vector_i² · context + Σ extra``."""
    return context * np.sum(inputs.scale * inputs.vector ** 2) + sum(inputs.extra)


weighted = tree_primitive(_weighted, "weighted")
ASKED = []


def _weighted_vjp(traced, ans, context, inputs):
    ASKED.append(traced)

    def pullback(g):
        return Inputs(scale=g * context * inputs.vector ** 2 if traced.scale else None,
                      vector=g * context * 2 * inputs.scale * inputs.vector
                      if traced.vector else None,
                      extra=tuple(g if wanted else None for wanted in traced.extra))

    return pullback


defvjp_tree(weighted, _weighted_vjp)
SCALE, VECTOR = np.array([1.0, 2.0, 0.5]), np.array([0.3, -1.2, 0.8])


def test_plain_inputs_call_the_function():
    assert weighted(2.0, Inputs(SCALE, VECTOR, (1.0,))) == 2.0 * np.sum(SCALE * VECTOR ** 2) + 1


def test_the_rule_names_the_traced_inputs_and_its_gradient_is_checked():
    ASKED.clear()

    def f(x):
        scale, vector, last = x
        return weighted(1.5, Inputs(scale, VECTOR, (0.5, last))) * vector[0] + np.sum(vector)

    x = (SCALE, VECTOR, 2.0)
    gradient = grad(lambda x: weighted(1.5, Inputs(x[0], VECTOR, (0.5, x[1]))))((SCALE, 2.0))
    assert np.allclose(gradient[0], 1.5 * VECTOR ** 2) and gradient[1] == 1.0
    assert ASKED[-1] == Inputs(scale=True, vector=False, extra=(False, True))
    check_grad(f, x)
    result = taylor_test(lambda s: weighted(1.5, Inputs(s, s, ())), SCALE, verbose=False)
    assert np.all(result.rates > 1.9)
