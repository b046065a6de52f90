"""torch-fem's side of ``bench_plasticity_peers.py``: one case of :mod:`plastic_block`.

Run in the peers' environment (``make peers``), one process per case::

    .peers/bin/python benchmarks/peers/torchfem_plasticity.py --case '{"size": "8x8x8"}'

The model is torch-fem's own J2 path, as in its example ``examples/basic/solid/plasticity.ipynb``:
``Solid`` with ``IsotropicPlasticity3D(E, ν, σ_f, σ_f')``, ``σ_f(q) = σ_y + k q`` (radial return
with its local Newton iteration, one step for linear hardening, and the consistent tangent),
the prescribed top displacement in ``displacements`` scaled by the load factors given as
``increments`` (which may fall: the example's own history loads and unloads). ``E`` is a
tensor of one value per cell, ``θ_e E``. Newton with ``rtol = 0`` and ``atol = ATOL`` on the
free dofs' residual, ``method="direct"`` (scipy's ``spsolve``, SuperLU: torch-fem would pick
CG + AMG itself from 10 000 dofs). The reaction is torch-fem's internal force ``f`` on the top
face's z dofs. The gradient is torch-fem's own: ``solve`` with ``differentiable_parameters``
(its adjoint per increment, ``K^T λ = ḡ`` at the converged state, the residual's pullback to
the previous increment's stress and state, chained over the increments by autograd), then
``backward`` of the last reaction.

torch-fem starts each increment's Newton iteration from the previous increment's
displacement increment (a linear extrapolation). Where the history turns from loading to
unloading (increment 6) that start does not converge within its default 10 iterations (nor
within 30), and torch-fem cuts the increment back: it takes increments 6 to 9 in 2 to 3
substeps (its substep size grows back by 1.1 per success). Once points yield in reverse
(increment 9) a return map over two substeps is not the return map over one, so its
reactions from there differ from the other codes' by ~1e-7 (relative), not by round-off.
Its times include these substeps: they are how it runs this history. The case records the
load factors its last forward converged at (``factors_run``), so that fesens can be run on
the same substeps (``bench_plasticity_peers.py`` does) to show where the difference comes from.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import version

import numpy as np
import torch
from plastic_block import (
    AMPLITUDE,
    ATOL,
    FACTORS,
    HARDENING,
    POISSON,
    YIELD_STRESS,
    YOUNG,
    PlasticBlock,
)
from plastic_harness import Forward, ValueAndGrad, serve

torch.set_default_dtype(torch.float64)


def yield_stress(q: torch.Tensor) -> torch.Tensor:
    """``σ_f(q) = σ_y + k q``, linear isotropic hardening."""
    return YIELD_STRESS + HARDENING * q


def hardening_modulus(q: torch.Tensor) -> torch.Tensor:
    """``σ_f'(q) = k``."""
    return HARDENING * torch.ones_like(q)


def build(problem: PlasticBlock) -> tuple[Forward, ValueAndGrad, Callable[[], dict]]:
    """The forward and gradient functions of torch-fem's model of ``problem``, and the load
    factors its last forward converged at (``factors_run``)."""
    import torchfem.base
    from torchfem import Solid
    from torchfem.materials import IsotropicPlasticity3D

    points = problem.points()
    nu = torch.full((problem.n_cells,), POISSON)

    def material(young: torch.Tensor) -> IsotropicPlasticity3D:
        return IsotropicPlasticity3D(young, nu, yield_stress, hardening_modulus)

    model = Solid(torch.tensor(points), torch.tensor(problem.cells()),
                  material(torch.full((problem.n_cells,), YOUNG)))
    top = torch.tensor(problem.top(points))
    model.constraints[torch.tensor(problem.bottom(points))] = True
    model.constraints[top, 2] = True
    model.displacements[top, 2] = AMPLITUDE
    increments = torch.tensor(FACTORS)
    top_dof = 3 * int(np.flatnonzero(problem.top(points))[0]) + 2
    factors_run: list[float] = []
    solve_substep = torchfem.base.newton_solve

    def recorded_substep(residual, *args):
        """torch-fem's Newton solve of a substep, its end factor recorded when it converged
        (the prescribed increment ``DU`` is the second argument bound to the residual)."""
        du = solve_substep(residual, *args)
        factors_run.append(factors_run[-1] + float(residual.args[1][top_dof]) / AMPLITUDE)
        return du

    torchfem.base.newton_solve = recorded_substep

    def reactions(young: torch.Tensor, differentiable: bool) -> torch.Tensor:
        model.material = material(young)
        _, f, *_ = model.solve(increments=increments, rtol=0.0, atol=ATOL, method="direct",
                               return_intermediate=True,
                               differentiable_parameters=young if differentiable else None)
        return f[:, top, 2].sum(dim=-1)

    last_forward: list[float] = []

    def forward(theta: np.ndarray) -> np.ndarray:
        factors_run[:] = [0.0]
        values = reactions(YOUNG * torch.tensor(theta), False).numpy()
        last_forward[:] = factors_run
        return values

    def value_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        factors_run[:] = [0.0]
        theta_t = torch.tensor(theta, requires_grad=True)
        young = YOUNG * theta_t
        reaction = reactions(young, True)[-1]
        reaction.backward()
        return float(reaction.detach()), theta_t.grad.numpy().copy()

    return forward, value_and_grad, lambda: {"factors_run": list(last_forward)}


if __name__ == "__main__":
    serve("torch-fem", {"torch-fem": version("torch-fem"), "torch": torch.__version__}, build)
