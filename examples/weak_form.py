"""Advection–diffusion written as a weak form: solved and differentiated by fesens.

A channel ``[0, 1] x [0, 0.1]`` carries heat with the flow ``b = (Pe, 0)`` and diffuses it
with the conductivity ``κ``: ``−∇·(κ ∇T) + b · ∇T = 0``, ``T = 0`` at the inlet ``x = 0``,
``T = 1`` at the outlet ``x = 1``, insulated sides. For ``κ = 1`` the closed form along the
channel is ``T(x) = (exp(Pe x) − 1) / (exp(Pe) − 1)``, so ``T(1/2) = 1 / (a + 1)`` and
``dT(1/2)/dPe = −a / (2 (a + 1)²)`` with ``a = exp(Pe / 2)``.

The physics is the function :func:`advection_diffusion`, the integrand of the weak form
``∫ (κ ∇T · ∇N + (b · ∇T) N) dΩ = 0`` split into the part tested against ``N`` and the
part tested against ``∇N``. fesens derives its tangent (forward mode through the
function), solves with LU (the tangent is not symmetric) and differentiates ``T(1/2)`` in
``Pe`` and in the conductivity of every cell by one adjoint solve each.

Printed: ``T(1/2)`` and ``dT(1/2)/dPe`` against the closed form, and the Taylor test of the
gradient in the conductivity field (remainders falling 4x per halving: rate 2).

Run: ``python examples/weak_form.py [--fast]`` (``--fast``: 20 cells along the channel
instead of 80).
"""

from __future__ import annotations

import argparse

import numpy as np

from fesens.ad import value_and_grad
from fesens.ad.checks import taylor_test
from fesens.mesh.generators import rectangle
from fesens.physics.user_physics import weak_form_physics

PECLET = 5.0


def advection_diffusion(T, g, x, kappa=1.0, pe=PECLET):
    """``(r0, r1) = (b · ∇T, κ ∇T)`` with ``b = (pe, 0)``: ``T`` ``(n_cells, n_qp)``, ``g``
    ``(n_cells, n_qp, 2)``; the parameters arrive per cell, ``(n_cells, 1)``."""
    return pe * g[..., 0], kappa[..., None] * g


AdvectionDiffusion = weak_form_physics(advection_diffusion)


def closed_form(pe: float) -> tuple[float, float]:
    """``T(1/2)`` and ``dT(1/2)/dPe`` for ``κ = 1``."""
    a = np.exp(pe / 2)
    return 1 / (a + 1), -a / (2 * (a + 1) ** 2)


def main(argv: list[str] | None = None) -> dict:
    """Solve, differentiate, print; returns the printed numbers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="20 cells along the channel")
    args = parser.parse_args(argv)
    mesh = rectangle(20 if args.fast else 80, 2, 1.0, 0.1)
    model = AdvectionDiffusion(mesh)
    model.fix("left", value=0.0)
    model.fix("right", value=1.0)
    middle = int(np.argmin(np.linalg.norm(mesh.points - [0.5, 0.0], axis=1)))

    def T_middle(pe, kappa=1.0):
        return model.solve(pe=pe, kappa=kappa).field[middle, 0]

    value, slope = value_and_grad(T_middle)(PECLET)
    exact_value, exact_slope = closed_form(PECLET)
    print(f"T(1/2)      fesens {float(value):.6f}  closed form {exact_value:.6f}")
    print(f"dT(1/2)/dPe fesens {float(slope):.6f}  closed form {exact_slope:.6f}")
    kappa = 1.0 + 0.2 * np.random.default_rng(0).random(mesh.n_cells)
    print("Taylor test of dT(1/2)/dκ (per-cell conductivity):")
    taylor = taylor_test(lambda k: T_middle(PECLET, k), kappa)
    return {"value": float(value), "slope": float(slope), "exact_value": exact_value,
            "exact_slope": exact_slope, "rate": taylor.rate}


if __name__ == "__main__":
    main()
