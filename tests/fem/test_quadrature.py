"""Quadrature rules integrate monomials exactly up to their order on each reference domain."""

from __future__ import annotations

from itertools import product
from math import factorial, prod

import numpy as np
import pytest

from fesens.fem.elements.quadrature import (
    gauss_hex,
    gauss_line,
    gauss_quad,
    point_rule,
    simplex_rule,
)


def _cube_monomial(exponents: tuple[int, ...]) -> float:
    """``∫_[-1,1]^d Π x_k^(a_k)``."""
    return prod(0.0 if a % 2 else 2 / (a + 1) for a in exponents)


def _simplex_monomial(exponents: tuple[int, ...]) -> float:
    """``∫ Π x_k^(a_k)`` over the unit simplex: ``Π a_k! / (Σ a_k + d)!``."""
    return prod(factorial(a) for a in exponents) / factorial(sum(exponents) + len(exponents))


def _integrate(rule, exponents: tuple[int, ...]) -> float:
    points, weights = rule
    return float(weights @ np.prod(points ** np.array(exponents), axis=1))


TENSOR_RULES = [(gauss_line, 1), (gauss_quad, 2), (gauss_hex, 3)]
SIMPLEX_ORDERS = [(2, order) for order in range(7)] + [(3, order) for order in range(6)]


@pytest.mark.parametrize(("rule", "dim"), TENSOR_RULES, ids=["line", "quad", "hex"])
@pytest.mark.parametrize("order", range(8))
def test_tensor_rules_exact_up_to_order_in_each_variable(rule, dim, order):
    points, weights = rule(order)
    assert points.shape == ((order // 2 + 1) ** dim, dim)
    assert weights.shape == (len(points),)
    for exponents in product(range(order + 1), repeat=dim):
        expected = _cube_monomial(exponents)
        assert _integrate((points, weights), exponents) == pytest.approx(expected, abs=1e-13)


@pytest.mark.parametrize("order", range(8))
def test_gauss_line_is_not_exact_beyond_its_order(order):
    # Minimal number of points: degree order + 1 (if odd) or order + 2 is already missed.
    first_miss = order + 1 if order % 2 else order + 2
    missed = _integrate(gauss_line(order), (first_miss,))
    assert missed != pytest.approx(_cube_monomial((first_miss,)), abs=1e-10)


@pytest.mark.parametrize(("dim", "order"), SIMPLEX_ORDERS)
def test_simplex_rules_exact_up_to_order(dim, order):
    points, weights = simplex_rule(dim, order)
    assert points.shape[1] == dim
    for exponents in product(range(order + 1), repeat=dim):
        if sum(exponents) <= order:
            expected = _simplex_monomial(exponents)
            assert _integrate((points, weights), exponents) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(("dim", "order"), SIMPLEX_ORDERS)
def test_simplex_rules_have_positive_weights_and_interior_points(dim, order):
    points, weights = simplex_rule(dim, order)
    assert (weights > 0).all()
    assert (points > 0).all()
    assert (points.sum(axis=1) < 1).all()
    assert len(np.unique(points.round(12), axis=0)) == len(points)


@pytest.mark.parametrize(
    ("rule", "measure"),
    [
        (gauss_line(3), 2.0),
        (gauss_quad(3), 4.0),
        (gauss_hex(3), 8.0),
        (simplex_rule(2, 4), 1 / 2),
        (simplex_rule(3, 4), 1 / 6),
        (point_rule(), 1.0),
    ],
    ids=["line", "quad", "hex", "triangle", "tetrahedron", "point"],
)
def test_weights_sum_to_reference_measure(rule, measure):
    assert rule[1].sum() == pytest.approx(measure, rel=1e-14)


def test_simplex_rule_point_counts():
    counts = {order: len(simplex_rule(2, order)[1]) for order in range(7)}
    assert counts == {0: 1, 1: 1, 2: 3, 3: 6, 4: 6, 5: 7, 6: 12}
    assert [len(simplex_rule(3, order)[1]) for order in range(6)] == [1, 1, 4, 14, 14, 14]


def test_point_rule():
    points, weights = point_rule(5)
    assert points.shape == (1, 0)
    np.testing.assert_array_equal(weights, [1.0])


def test_rules_return_fresh_arrays():
    points, weights = simplex_rule(2, 2)
    points[:] = 0
    weights[:] = 0
    assert simplex_rule(2, 2)[1].sum() == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: simplex_rule(2, 7), ValueError, "triangle rule of order 7; available up to 6"),
        (lambda: simplex_rule(3, 6), ValueError, "tetrahedron rule of order 6"),
        (lambda: simplex_rule(4, 1), ValueError, "dim 2 and 3"),
        (lambda: gauss_line(-1), ValueError, "must be >= 0"),
        (lambda: gauss_quad(1.5), TypeError, "integer"),
    ],
)
def test_invalid_orders_raise(call, error, match):
    with pytest.raises(error, match=match):
        call()
