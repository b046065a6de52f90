"""A deliberately wrong VJP rule, for the tests of the gradient checks a user runs
(``fesens.ad.check_gradient``, ``fesens sensitivity --check``): a check that passes it
would pass anything."""

import pytest

from fesens.ad import registry, sparse


@pytest.fixture
def solve_rule_off_by_a_percent(monkeypatch):
    """The sparse solve's VJP rule gives 1.01 times the right cotangents: every gradient
    that reaches its inputs through a solve (a density's, a stiffness parameter's) is 1 %
    too large."""
    right = registry._JOINT[sparse.solve]

    def wrong(argnums, u, K, f, solver="auto"):
        pullback = right(argnums, u, K, f, solver)
        return lambda g: pullback(1.01 * g)

    monkeypatch.setitem(registry._JOINT, sparse.solve, wrong)
    registry.ANS_FLAGS.clear()  # the tape's cache derived from the rules
    yield
    registry.ANS_FLAGS.clear()
