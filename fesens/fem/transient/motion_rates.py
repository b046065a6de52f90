"""The velocity and acceleration factors of a prescribed motion ``g φ(t)`` by the
Newmark update (:func:`newmark_rates`), a primitive whose VJP reverses that recursion: a
:class:`~fesens.fem.transient.dynamics.DynamicProblem`'s constrained dofs then satisfy the
update the free dofs do.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fesens.ad.tree_primitive import defvjp_tree, tree_primitive


class MotionFactors(NamedTuple):
    """The traced inputs of :func:`newmark_rates`: the displacement factors ``φ``
    ``(N + 1,)`` and the initial rates ``(φ̇_0, φ̈_0)`` ``(2,)``."""

    displacement: np.ndarray
    initial_rates: np.ndarray


def _newmark_rates(coefficients, factors: MotionFactors) -> np.ndarray:
    """``[φ_n, φ̇_n, φ̈_n]`` ``(N + 1, 3)`` of displacement factors ``φ`` ``(N + 1,)``: the
    velocity and acceleration that the Newmark update gives a displacement known at every
    level, from ``(φ̇_0, φ̈_0)`` ``(2,)``::

        φ̈_n = (φ_n − φ_(n−1) − Δt φ̇_(n−1) − Δt² (½ − β) φ̈_(n−1)) / (β Δt²)
        φ̇_n = φ̇_(n−1) + Δt ((1 − γ) φ̈_(n−1) + γ φ̈_n)

    so a prescribed ``(u_c, v_c, a_c)`` satisfies the update the free dofs do (a rigid
    motion of every dof is a solution of the discrete equations with ``K`` of no rigid
    energy). ``coefficients``: a ``NewmarkCoefficients`` with ``β > 0``."""
    c = coefficients
    phi = np.asarray(factors.displacement, dtype=float)
    rates0 = np.asarray(factors.initial_rates, dtype=float)
    out = np.empty((phi.size, 3))
    out[:, 0] = phi
    out[0, 1:] = rates0
    scale = 1.0 / (c.beta * c.dt ** 2)
    for n in range(1, phi.size):
        _, v, a = out[n - 1]
        a_new = scale * (phi[n] - phi[n - 1] - c.dt * v - c.dt ** 2 * (0.5 - c.beta) * a)
        out[n, 1] = v + c.dt * ((1 - c.gamma) * a + c.gamma * a_new)
        out[n, 2] = a_new
    return out


_rates = tree_primitive(_newmark_rates, "newmark_rates")


def newmark_rates(phi, rates0, coefficients) -> np.ndarray:
    """``[φ_n, φ̇_n, φ̈_n]`` ``(N + 1, 3)`` of ``φ`` ``(N + 1,)`` from ``rates0 = (φ̇_0,
    φ̈_0)`` by the Newmark update of ``coefficients`` (see :func:`_newmark_rates`);
    traced in ``φ`` and ``rates0``."""
    return _rates(coefficients, MotionFactors(phi, rates0))


def _newmark_rates_vjp(traced: MotionFactors, out, coefficients, factors: MotionFactors):
    def pullback(out_bar):
        c = coefficients
        bar = np.array(out_bar, dtype=float)  # a copy: accumulated in place, last first
        phi_bar = np.zeros(bar.shape[0])
        scale = 1.0 / (c.beta * c.dt ** 2)
        for n in range(bar.shape[0] - 1, 0, -1):
            v_bar = bar[n, 1]  # φ̇_n reads φ̈_n: its cotangent first
            bar[n - 1, 1] += v_bar
            bar[n - 1, 2] += c.dt * (1 - c.gamma) * v_bar
            a_bar = scale * (bar[n, 2] + c.dt * c.gamma * v_bar)
            phi_bar[n] += a_bar
            phi_bar[n - 1] -= a_bar
            bar[n - 1, 1] -= c.dt * a_bar
            bar[n - 1, 2] -= c.dt ** 2 * (0.5 - c.beta) * a_bar
        phi_bar += bar[:, 0]
        return MotionFactors(displacement=phi_bar, initial_rates=bar[0, 1:].copy())

    return pullback


defvjp_tree(_rates, _newmark_rates_vjp)
