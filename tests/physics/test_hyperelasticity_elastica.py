"""The large-deflection cantilever under a dead tip load against the elastica.

Bisshopp & Drucker, *Large deflection of cantilever beams*, Q. Appl. Math. 3 (1945)
272–275, solved the elastica of a cantilever under a vertical dead load ``P`` at its tip in
elliptic integrals; Mattiasson, *Numerical results from large deflection beam and frame
problems analysed by means of elliptic integrals*, IJNME 17 (1981) 145–153, Table I,
tabulates the tip displacements. ``k = PL²/EI``; ``u/L`` is the horizontal (shortening)
and ``w/L`` the vertical displacement of the tip.
"""

from __future__ import annotations

import numpy as np
import pytest

from fesens.mesh.generators import rectangle
from fesens.physics.hyperelasticity import FiniteStrainElasticity

#: k = PL²/EI: (u/L, w/L) of the tip (Mattiasson 1981, Table I).
ELASTICA = {1: (0.05643, 0.30172), 2: (0.16064, 0.49346), 3: (0.25442, 0.60325),
            4: (0.32894, 0.66996), 5: (0.38763, 0.71379), 10: (0.55500, 0.81061)}

LENGTH, HEIGHT, E, NU = 1.0, 0.01, 1.0e6, 0.3


def tip_ratios(nx: int, ny: int, cell_type: str, law: str) -> dict:
    """``k -> (u/L, w/L)`` of the centre of the tip section of a clamped beam of length
    100 h in plane strain under a dead vertical traction on its end face totalling ``P``.

    ``EI`` is that of plane strain, ``E/(1 − ν²) · h³/12`` per unit thickness (the beam is
    a plate strip bent cylindrically); the strains stay below ``k h / (2L) = 5 %``, where
    both laws are near Hooke's. Newton takes full steps (``line_search=None``): the
    predictor of a slender beam stretches its axis by ``θ²/2``, a residual far above the
    load's, which the Newton iterations remove but a residual line search refuses.
    """
    mesh = rectangle(nx, ny, LENGTH, HEIGHT, cell_type)
    model = FiniteStrainElasticity(mesh, E=E, nu=NU, law=law)
    EI = E / (1.0 - NU ** 2) * HEIGHT ** 3 / 12.0
    model.fix("left")
    model.traction("right", (0.0, -EI / LENGTH ** 2 / HEIGHT), name="tip")  # P for k = 1
    tip = int(np.argmin(np.linalg.norm(mesh.points - [LENGTH, HEIGHT / 2], axis=1)))
    assert np.allclose(mesh.points[tip], [LENGTH, HEIGHT / 2])
    ratios = {}
    for k in ELASTICA:
        solution = model.solve(loads={"tip": float(k)}, steps=4, warm_start=False,
                               newton={"line_search": None})
        u = solution.displacement[tip]
        ratios[k] = (-u[0] / LENGTH, -u[1] / LENGTH)
    return ratios


@pytest.mark.slow
def test_cantilever_tip_load_against_the_elastica():
    """quad9, 50 x 1 and 100 x 2 cells (St. Venant–Kirchhoff), and 50 x 1 neo-Hookean: every
    tip displacement within 1 % of the elastica (measured: ≤ 0.25 % coarse, ≤ 0.1 % fine),
    the finer mesh closer at every load, and the two laws alike at these strains."""
    coarse = tip_ratios(50, 1, "quad9", "saint-venant-kirchhoff")
    fine = tip_ratios(100, 2, "quad9", "saint-venant-kirchhoff")
    for k, expected in ELASTICA.items():
        error_coarse = np.abs(np.array(coarse[k]) / expected - 1)
        error_fine = np.abs(np.array(fine[k]) / expected - 1)
        assert error_coarse.max() < 0.01, (k, coarse[k], expected)
        assert error_fine.max() < 0.01, (k, fine[k], expected)
        assert np.all(error_fine < error_coarse), (k, coarse[k], fine[k], expected)
    neo_hookean = tip_ratios(50, 1, "quad9", "neo-hookean")
    for k, expected in ELASTICA.items():
        assert np.abs(np.array(neo_hookean[k]) / expected - 1).max() < 0.01
        assert np.abs(np.array(neo_hookean[k]) - coarse[k]).max() < 1e-3
