"""torch-fem's side of ``bench_nonlinear_peers.py``: one case of :mod:`cantilever`.

Run in the peers' environment (``make peers``), one process per case::

    .peers/bin/python benchmarks/peers/torchfem_case.py --case '{"size": "16x8x8"}'

The model is torch-fem's own finite-strain path, as in its example
``examples/basic/solid/large_stretch.ipynb`` and its benchmark ``benchmarks/hyperelasticity.py``:
``Solid`` with ``Hyperelastic3D(psi, params)``, the strain energy ``psi`` written as there
(``ln J = ½ ln det C``, the form torch-fem's documentation asks for) and
``params`` of shape ``(n_cells, 2)`` (one ``(μ, λ)`` per cell, so ``θ_e`` scales ``W`` of its
cell). Dead nodal forces (:meth:`cantilever.Cantilever.nodal_load`), load increments
``0, 1/STEPS, ..., 1``, Newton with ``rtol = RTOL, atol = ATOL`` on the residual norm,
``method="direct"`` (scipy's ``spsolve``, SuperLU, as the jax-fem script uses; torch-fem
picks CG + AMG itself from 10 000 dofs). The gradient is torch-fem's own: ``solve`` with
``differentiable_parameters``, then ``backward`` of the compliance, one adjoint solve per
load increment chained by autograd.
"""

from __future__ import annotations

from importlib.metadata import version

import numpy as np
import torch
from cantilever import ATOL, LAMBDA, MU, RTOL, STEPS, Cantilever
from harness import Forward, ValueAndGrad, serve

torch.set_default_dtype(torch.float64)


def psi(F: torch.Tensor, params: torch.Tensor) -> torch.Tensor:
    """Compressible neo-Hookean ``W(F)`` of one point, ``params = θ (μ, λ)``."""
    mu, lam = params[0], params[1]
    C = F.transpose(-1, -2) @ F
    log_J = 0.5 * torch.logdet(C)
    return mu / 2 * (torch.trace(C) - 3.0) - mu * log_J + lam / 2 * log_J**2


def build(problem: Cantilever) -> tuple[Forward, ValueAndGrad]:
    """The forward and gradient functions of torch-fem's model of ``problem``."""
    from torchfem import Solid
    from torchfem.materials import Hyperelastic3D

    points = problem.points()
    lame = torch.tensor([MU, LAMBDA])

    def material(theta: torch.Tensor) -> Hyperelastic3D:
        return Hyperelastic3D(psi, theta[:, None] * lame)

    model = Solid(torch.tensor(points), torch.tensor(problem.cells()),
                  material(torch.ones(problem.n_cells)))
    model.constraints[torch.tensor(problem.clamped(points))] = True
    load = torch.tensor(problem.nodal_load(points))
    model.forces = load
    increments = torch.linspace(0.0, 1.0, STEPS + 1)

    def solve(theta: torch.Tensor, params: torch.Tensor | None) -> torch.Tensor:
        model.material = material(theta) if params is None else Hyperelastic3D(psi, params)
        u, *_ = model.solve(increments=increments, rtol=RTOL, atol=ATOL, method="direct",
                            differentiable_parameters=params)
        return (load * u).sum()

    def forward(theta: np.ndarray) -> float:
        return float(solve(torch.tensor(theta), None))

    def value_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        theta_t = torch.tensor(theta, requires_grad=True)
        compliance = solve(theta_t, theta_t[:, None] * lame)
        compliance.backward()
        return float(compliance.detach()), theta_t.grad.numpy().copy()

    return forward, value_and_grad


if __name__ == "__main__":
    serve("torch-fem", {"torch-fem": version("torch-fem"), "torch": torch.__version__}, build)
