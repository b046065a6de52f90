"""examples/dynamic_compliance.py in fast mode: the dynamic compliances it prints and its
frequency sweep are those of ``(K − ω² M) u = f`` solved here with SciPy on the cantilever's
matrices (SIMP 3 stiffness, Du & Olhoff 2007's mass ``ρ`` above 0.1 and
``6·10⁵ ρ⁶ − 5·10⁶ ρ⁷`` below), its first eigenfrequencies those of SciPy's ``eigsh``, each
curve's first resonance lies at that eigenfrequency, and the optimized design's dynamic
compliance at the driving frequency is far below the uniform one's."""

import re

import numpy as np
import pytest
import scipy.sparse.linalg as spla
from example_helpers import load_example
from matplotlib.image import imread

from fesens.mesh import rectangle
from fesens.physics import Elasticity


def cantilever_matrices(rho: np.ndarray):
    """``K_ff``, ``M_ff`` and ``f_f`` of the 2 x 1 cantilever at densities ``ρ``."""
    model = Elasticity(rectangle(40, 20, 2.0, 1.0), E=1.0, nu=0.3, plane="stress")
    model.fix("left")
    model.point_load((2.0, 0.5), (0.0, -1.0), name="F")
    mass = 1e-12 + (1 - 1e-12) * np.where(rho > 0.1, rho, 6e5 * rho**6 - 5e6 * rho**7)
    K = model.stiffness(scale=1e-9 + (1 - 1e-9) * rho**3).tocsr()
    M = model.mass(density=mass).tocsr()
    return K, M, np.asarray(model.load_vector())[model.free_dofs]


def dynamic_compliance(K, M, f, frequency: float) -> float:
    omega = 2 * np.pi * frequency
    return abs(f @ spla.spsolve((K - omega**2 * M).tocsc(), f))


def test_dynamic_compliance_and_response(tmp_path, capsys):
    numbers = load_example("dynamic_compliance").main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    values = {}
    frequencies = numbers["frequencies"]
    for name in ("initial", "optimized"):
        match = re.search(rf"{name} design: \|f · u\| ([\d.]+) at 0.01 Hz; first "
                          rf"eigenfrequency ([\d.]+) Hz", printed)
        K, M, f = cantilever_matrices(numbers["densities"][name])
        values[name] = float(match.group(1))
        assert values[name] == pytest.approx(dynamic_compliance(K, M, f, 0.01), abs=6e-5)
        curve = numbers["curves"][name]
        for index in (0, 17, 41):
            assert curve[index] == pytest.approx(
                dynamic_compliance(K, M, f, frequencies[index]), rel=1e-9)
        lam = spla.eigsh(K.tocsc(), k=1, M=M.tocsc(), sigma=0.0)[0][0]
        f1 = np.sqrt(lam) / (2 * np.pi)
        assert float(match.group(2)) == pytest.approx(f1, abs=6e-6)
        # |f · u| grows up to the first resonance, its largest value near f1 at one of
        # the two sweep points around it.
        below = frequencies < f1
        assert np.all(np.diff(curve[below]) > 0)
        near = frequencies < 1.2 * f1
        assert np.argmax(curve[near]) in (np.flatnonzero(below)[-1],
                                          np.flatnonzero(below)[-1] + 1)
    assert values["optimized"] < values["initial"] / 3
    assert numbers["volume"] <= 0.5 + 1e-3
    for picture in numbers["pictures"]:
        pixels = imread(picture)
        assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100, picture
