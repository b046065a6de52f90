"""What the tape records and keeps: constants are never traced, rules are looked up for
traced arguments only, and saved values are released during the backward sweep."""

import gc
import weakref

import numpy as np
import pytest
from ad_helpers import normal, scratch_rules  # noqa: F401 - fixture

from fesens.ad import (
    Box,
    defvjp,
    grad,
    primitive,
    stop_gradient,
    tracer,
    value_and_grad,
    vjp,
)

N = 30
MATRICES = [normal((N, N), seed=k) for k in range(10)]
X = normal(N, seed=99)
EXPECTED = sum((A + A.T) @ X for A in MATRICES)


@pytest.fixture
def recorded_nodes(monkeypatch):
    """Every node whose rules the backward sweep asks for, as it asks."""
    nodes = []
    original = tracer.node_cotangents

    def spy(node, g):
        nodes.append((node.fun, node.argnums, list(node.args)))
        return original(node, g)

    monkeypatch.setattr(tracer, "node_cotangents", spy)
    return nodes


def _traced_inputs(recorded):
    """The values of the traced arguments of every recorded node."""
    return [args[i] for _, argnums, args in recorded for i in argnums]


def test_constant_matrices_with_plain_numpy(recorded_nodes):
    g = grad(lambda x: sum(x @ (A @ x) for A in MATRICES))(X)
    assert np.allclose(g, EXPECTED, rtol=1e-12)
    traced = _traced_inputs(recorded_nodes)
    assert traced, "the spy saw no node"
    assert not any(t is A for t in traced for A in MATRICES)
    assert all(np.shape(t) != (N, N) for t in traced)


@pytest.mark.usefixtures("scratch_rules")
def test_constant_argument_of_a_primitive_is_never_asked_for_a_rule(recorded_nodes):
    """``apply(A, x)`` has no rule for ``A``: with ``A`` constant, grad must not need one."""
    apply = primitive(lambda A, x: A @ x, "apply")
    defvjp(apply, None, lambda ans, A, x: lambda g: A.T @ g)

    g = grad(lambda x: sum(x @ apply(A, x) for A in MATRICES))(X)
    assert np.allclose(g, EXPECTED, rtol=1e-12)
    for fun, argnums, _ in recorded_nodes:
        if fun is apply:
            assert argnums == (1,)
    assert sum(fun is apply for fun, _, _ in recorded_nodes) == len(MATRICES)


def test_constants_are_not_boxed_and_results_of_constants_are_plain():
    seen = {}

    def f(x):
        seen["constant product"] = MATRICES[0] @ MATRICES[1]
        seen["traced"] = MATRICES[0] @ x
        return np.sum(seen["traced"] ** 2)

    grad(f)(X)
    assert type(seen["constant product"]) is np.ndarray
    assert type(seen["traced"]) is Box


def test_stop_gradient_makes_a_constant():
    g = grad(lambda x: np.sum(x * stop_gradient(x)))(X)
    assert np.allclose(g, X, rtol=1e-15)


# ------------------------------------------------------------------ release of saved values
@pytest.mark.usefixtures("scratch_rules")
def test_saved_values_are_released_after_grad():
    """A node's saved values are dropped once its rule ran; nothing keeps them alive."""
    spread = primitive(lambda x: np.outer(x, np.ones(20_000)), "spread")  # 4.8 MB from 30
    defvjp(spread, lambda ans, x: lambda g: np.sum(g, axis=1))
    kept = {}

    def f(x):
        big = spread(x)
        kept["node"] = big.node
        kept["value"] = weakref.ref(big.value)
        return np.sum(np.sin(big))

    g = grad(f)(X)
    assert np.allclose(g, 20_000 * np.cos(X), rtol=1e-12)
    gc.collect()
    node = kept["node"]
    assert node.ans is None and node.args is None and node.kwargs is None
    assert kept["value"]() is None, "the large intermediate outlived grad"


@pytest.mark.usefixtures("scratch_rules")
def test_saved_values_are_released_during_the_sweep():
    """When the first node's rule runs, the later nodes have already dropped their values."""
    spread = primitive(lambda x: np.outer(x, np.ones(20_000)), "spread")
    refs, alive_at_first_rule = {}, []

    def spread_vjp(ans, x):
        gc.collect()
        alive_at_first_rule.extend(name for name, r in refs.items() if r() is not None)
        return lambda g: np.sum(g, axis=1)

    defvjp(spread, spread_vjp)

    def f(x):
        big = spread(x)
        s = np.sin(big)
        refs["sin(big)"] = weakref.ref(s.value)
        t = s * s
        refs["sin(big)**2"] = weakref.ref(t.value)
        return np.sum(t)

    grad(f)(X)
    assert alive_at_first_rule == []


def test_a_node_keeps_its_output_only_when_a_rule_reads_it(monkeypatch):
    """``x**2`` (rule 2x) and ``x * y`` do not keep their outputs; ``exp`` (rule eˣ) does.
    So the output of ``x**2`` is freed as soon as ``sum`` has run its rule."""
    nodes, alive_at_square_rule = {}, []
    original = tracer.node_cotangents

    def spy(node, g):
        if node is nodes.get("square"):
            gc.collect()
            alive_at_square_rule.append(nodes["square value"]() is not None)
        return original(node, g)

    monkeypatch.setattr(tracer, "node_cotangents", spy)

    def f(x):
        square, product, exponential = x**2, x * x, np.exp(x)
        nodes.update({"square": square.node, "square value": weakref.ref(square.value)})
        assert square.node.ans is None and product.node.ans is None
        assert exponential.node.ans is exponential.value
        return np.sum(square) + np.sum(product) + np.sum(exponential)

    assert np.allclose(grad(f)(X), 4 * X + np.exp(X), rtol=1e-14)
    assert alive_at_square_rule == [False]


def test_vjp_keeps_the_tape_for_repeated_pullbacks():
    _, pullback = vjp(lambda x: np.exp(x) * x, X)
    w = normal(N, seed=5)
    assert np.allclose(pullback(w), pullback(w))
    assert np.allclose(pullback(w), w * np.exp(X) * (1 + X), rtol=1e-14)


def test_value_and_grad_twice_on_fresh_traces():
    vg = value_and_grad(lambda x: np.sum(np.exp(x)))
    for _ in range(2):
        value, g = vg(X)
        assert np.allclose(g, np.exp(X)) and value == pytest.approx(np.sum(np.exp(X)))
