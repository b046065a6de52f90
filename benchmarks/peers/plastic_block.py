"""The J2-plastic block that every code of ``bench_plasticity_peers.py`` solves.

One definition for all codes, so that their numbers can be compared. It is JAX-FEM's
plasticity demo (``demos/plasticity/example.py``: a 10 mm HEX8 cube, ``E = 70 GPa``,
``ν = 0.3``, ``σ_y = 250 MPa``, the top face pulled by up to 0.1 mm and let back) with the
linear isotropic hardening of torch-fem's J2 example (``examples/basic/solid/plasticity.ipynb``:
``σ_f(q) = σ_y + k q`` with ``k = E / 10``), and a history that also reverses:

* a cube ``[0, L]³`` of ``nx x ny x nz`` hex8 cells (trilinear, 2x2x2 Gauss points), nodes and
  cells numbered as in :mod:`cantilever` (VTK corner order);
* small-strain J2 (von Mises) plasticity, associative flow, radial return, linear isotropic
  hardening ``σ_y(ᾱ) = σ_y0 + H ᾱ`` (``ᾱ`` the equivalent plastic strain), no kinematic
  hardening; a per-cell factor ``θ_e`` of Young's modulus, ``E_e = θ_e E`` (1 at the
  evaluation point): the design field of the gradient;
* the bottom face ``z = 0`` clamped (all components: the demo fixes only ``u_z`` there and
  leaves the x-y rigid motions to its iterative solver; a direct solver needs them held),
  the top face ``z = L`` moved along ``z`` by ``δ_n = t_n δ`` (``u_x``, ``u_y`` free there), the
  load factors :data:`FACTORS`: 5 increments up to ``t = 1`` (yielding), 10 down to ``t = −1``
  (unloading, then reverse yielding), 15 in all;
* Newton per increment from the previous increment's solution, stopped when the free dofs'
  residual ``‖R‖₂ < ATOL`` (every code's either/or test with its relative part switched off);
  direct linear solves;
* objective: the top face's reaction ``F = Σ R_z`` over its nodes at the last increment
  (``R = R_int(u)`` on the constrained dofs), and its gradient with respect to ``θ``
  (shape ``(n_cells,)``). The reaction history ``F_n`` is compared between the codes.

Only numpy: the peer scripts import this module in their own environment, and so can fesens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: JAX-FEM's demo: 10 mm cube, aluminium-like constants (MPa).
LENGTH = 10.0
YOUNG, POISSON, YIELD_STRESS = 70.0e3, 0.3, 250.0
#: torch-fem's example hardens by k = E / 10.
HARDENING = YOUNG / 10.0
SHEAR = YOUNG / (2.0 * (1.0 + POISSON))
LAMBDA = YOUNG * POISSON / ((1.0 + POISSON) * (1.0 - 2.0 * POISSON))
#: JAX-FEM's demo's largest top displacement (1 % strain, 2.8 times the yield strain).
AMPLITUDE = 0.1
#: Load factors of the top displacement: up to 1, then down to −1.
FACTORS = np.concatenate([np.linspace(0.0, 1.0, 6), np.linspace(1.0, -1.0, 11)[1:]])
#: Newton stops when ‖R‖₂ < ATOL (N) on the free dofs; the reactions are ~1e4 N, the
#: forces per node ~1e2 N, so this is ~1e-12 of them.
ATOL = 1e-8
#: Central-difference step of the gradient check (in θ, along a unit-max direction).
FD_STEP = 1e-5
HEX8_CORNERS = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                         [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]])


@dataclass(frozen=True)
class PlasticBlock:
    """The block on an ``nx x ny x nz`` grid; see the module docstring."""

    nx: int
    ny: int
    nz: int

    @classmethod
    def parse(cls, text: str) -> PlasticBlock:
        """``"8x8x8"`` -> ``PlasticBlock(8, 8, 8)``."""
        cells = tuple(int(n) for n in text.lower().split("x"))
        if len(cells) != 3 or min(cells) < 1:
            raise ValueError(f"size must look like 8x8x8, got {text!r}")
        return cls(*cells)

    @property
    def label(self) -> str:
        return f"{self.nx}x{self.ny}x{self.nz}"

    @property
    def n_cells(self) -> int:
        return self.nx * self.ny * self.nz

    @property
    def n_dofs(self) -> int:
        return 3 * (self.nx + 1) * (self.ny + 1) * (self.nz + 1)

    def points(self) -> np.ndarray:
        """Node coordinates, shape ``(n_nodes, 3)``; node ``i + (nx+1) (j + (ny+1) k)``."""
        axes = [np.linspace(0.0, LENGTH, n + 1) for n in (self.nx, self.ny, self.nz)]
        z, y, x = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
        return np.column_stack([x.ravel(), y.ravel(), z.ravel()])

    def cells(self) -> np.ndarray:
        """Hex8 connectivity in VTK order, shape ``(n_cells, 8)``; cell ``i + nx (j + ny k)``."""
        k, j, i = np.meshgrid(np.arange(self.nz), np.arange(self.ny), np.arange(self.nx),
                              indexing="ij")
        corner = (i.ravel()[:, None] + HEX8_CORNERS[:, 0]
                  + (self.nx + 1) * (j.ravel()[:, None] + HEX8_CORNERS[:, 1]
                                     + (self.ny + 1) * (k.ravel()[:, None] + HEX8_CORNERS[:, 2])))
        return corner.astype(np.int64)

    def bottom(self, points: np.ndarray) -> np.ndarray:
        """Mask of the clamped nodes (``z = 0``), shape ``(n_nodes,)``."""
        return np.isclose(points[:, 2], 0.0)

    def top(self, points: np.ndarray) -> np.ndarray:
        """Mask of the nodes moved along z (``z = L``), shape ``(n_nodes,)``."""
        return np.isclose(points[:, 2], LENGTH)

    def constrained_dofs(self, points: np.ndarray) -> np.ndarray:
        """The constrained dofs ``3 node + component``, sorted: every component at the
        bottom, z at the top."""
        mask = np.zeros((len(points), 3), dtype=bool)
        mask[self.bottom(points)] = True
        mask[self.top(points), 2] = True
        return np.flatnonzero(mask)

    def top_z_dofs(self, points: np.ndarray) -> np.ndarray:
        """The dofs whose reactions sum to the objective ``F``."""
        return 3 * np.flatnonzero(self.top(points)) + 2


def gradient_direction(n_cells: int) -> np.ndarray:
    """The fixed random direction of the central-difference check, shape ``(n_cells,)``."""
    return np.random.default_rng(0).uniform(-1.0, 1.0, n_cells)


def uniaxial_reaction(factor: float) -> float:
    """The reaction ``F`` of a first loading to ``t = factor ≥ 0`` if the block were in
    uniaxial stress (no lateral constraint at the bottom): ``σ A`` with ``σ = E ε`` below the
    yield strain and ``σ = σ_y + E H / (E + H) (ε − σ_y / E)`` above it (linear hardening).
    The clamped bottom makes the block stiffer than this; a sanity bound, not a reference."""
    strain = factor * AMPLITUDE / LENGTH
    yield_strain = YIELD_STRESS / YOUNG
    if strain <= yield_strain:
        stress = YOUNG * strain
    else:
        stress = YIELD_STRESS + YOUNG * HARDENING / (YOUNG + HARDENING) * (strain - yield_strain)
    return stress * LENGTH**2
