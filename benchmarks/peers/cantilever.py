"""The finite-strain cantilever that every code of ``bench_nonlinear_peers.py`` solves.

One definition for all codes, so that their numbers can be compared:

* a box ``[0, nx/ny] x [0, 1] x [0, nz/ny]`` of ``nx x ny x nz`` cube hex8 cells (trilinear,
  2x2x2 Gauss points), the geometry of ``_common.cantilever_model`` in 3D;
* compressible neo-Hookean, ``W = θ_e (μ/2 (I_C − 3) − μ ln J + λ/2 (ln J)²)`` (Bonet & Wood,
  *Nonlinear Continuum Mechanics for Finite Element Analysis*, 2nd ed., 2008, eq. 6.28), with
  ``E = 1, ν = 0.3`` and a per-cell stiffness scale ``θ_e`` (1 at the evaluation point);
* clamped at ``x = 0``; a dead traction ``(0, −τ, 0)`` per unit reference area on ``x = L``,
  applied in ``STEPS`` equal load steps (Newton from the previous step's solution);
* objective: the end compliance ``C = f_ext · u`` (the work of the full load on the final
  displacement), and its gradient with respect to ``θ`` (shape ``(n_cells,)``).

Only numpy: the peer scripts import this module in their own environment, and so can fesens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

YOUNG, POISSON = 1.0, 0.3
MU = YOUNG / (2.0 * (1.0 + POISSON))
LAMBDA = YOUNG * POISSON / ((1.0 + POISSON) * (1.0 - 2.0 * POISSON))
#: Traction magnitude: the tip deflects by about 18 % of the length, far from Hooke's law.
TRACTION = 0.01
STEPS = 4
#: Newton stops per load step when ‖R‖₂ < RTOL ‖R₀‖₂ or ‖R‖₂ < ATOL (R on the free dofs).
RTOL, ATOL = 1e-10, 1e-12
#: Central-difference step of the gradient check (in θ, along a unit-max direction).
FD_STEP = 1e-4
#: Corner offsets of a hex8 cell in VTK / meshio order (torch-fem's Hexa1 and jax-fem's
#: HEX8 both use it): the bottom face counter-clockwise, then the top face.
HEX8_CORNERS = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                         [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]])


@dataclass(frozen=True)
class Cantilever:
    """The cantilever on an ``nx x ny x nz`` grid; see the module docstring."""

    nx: int
    ny: int
    nz: int

    @classmethod
    def parse(cls, text: str) -> Cantilever:
        """``"16x8x8"`` -> ``Cantilever(16, 8, 8)``."""
        cells = tuple(int(n) for n in text.lower().split("x"))
        if len(cells) != 3 or min(cells) < 1:
            raise ValueError(f"size must look like 16x8x8, got {text!r}")
        return cls(*cells)

    @property
    def label(self) -> str:
        return f"{self.nx}x{self.ny}x{self.nz}"

    @property
    def lengths(self) -> tuple[float, float, float]:
        return self.nx / self.ny, 1.0, self.nz / self.ny

    @property
    def n_cells(self) -> int:
        return self.nx * self.ny * self.nz

    def points(self) -> np.ndarray:
        """Node coordinates, shape ``(n_nodes, 3)``; node ``i + (nx+1) (j + (ny+1) k)``."""
        axes = [np.linspace(0.0, length, n + 1)
                for length, n in zip(self.lengths, (self.nx, self.ny, self.nz), strict=True)]
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

    def clamped(self, points: np.ndarray) -> np.ndarray:
        """Mask of the nodes on ``x = 0``, shape ``(n_nodes,)``."""
        return np.isclose(points[:, 0], 0.0)

    def loaded(self, points: np.ndarray) -> np.ndarray:
        """Mask of the nodes on ``x = L``, shape ``(n_nodes,)``."""
        return np.isclose(points[:, 0], self.lengths[0])

    def nodal_load(self, points: np.ndarray) -> np.ndarray:
        """Consistent nodal forces of the full traction, shape ``(n_nodes, 3)``.

        A constant traction on a bilinear face quad of area ``A`` gives ``t A / 4`` at each of
        its corners, exactly what a Gauss rule on the face integrates; so this vector equals
        a code's own surface integral of the traction.
        """
        hy, hz = 1.0 / self.ny, self.lengths[2] / self.nz
        # How many face quads each node of the loaded face touches: 1 at the corners,
        # 2 on the edges, 4 inside.
        y_count = np.where(np.isclose(points[:, 1], 0.0) | np.isclose(points[:, 1], 1.0), 1, 2)
        z_count = np.where(np.isclose(points[:, 2], 0.0)
                           | np.isclose(points[:, 2], self.lengths[2]), 1, 2)
        area = y_count * z_count * hy * hz / 4.0 * self.loaded(points)
        load = np.zeros_like(points)
        load[:, 1] = -TRACTION * area
        return load


def gradient_direction(n_cells: int) -> np.ndarray:
    """The fixed random direction of the central-difference check, shape ``(n_cells,)``."""
    return np.random.default_rng(0).uniform(-1.0, 1.0, n_cells)
