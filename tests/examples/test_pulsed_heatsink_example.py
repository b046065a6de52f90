"""examples/pulsed_heatsink.py in fast mode: the chip temperature histories it prints are
those of a BDF2 run written here on the model's matrices (backward Euler first step, then
``(3/2 M + Δt K) T_(n+1) = 2 M T_n − M T_(n−1)/2 + Δt f(t_(n+1))``; Hairer & Wanner,
*Solving Ordinary Differential Equations I*, §III.1), the optimized design's peak is far
below the uniform one's, and the KS objective bounds the peak from above."""

import re

import numpy as np
import pytest
import scipy.sparse.linalg as spla
from example_helpers import load_example
from matplotlib.image import imread

from fesens.mesh import rectangle
from fesens.physics import HeatConduction

DT, STEPS = 0.02, 25


def pulse(t: float) -> float:
    """The chip's source history: up in 0.02, held to 0.2, off at 0.22."""
    return float(np.interp(t, [0.0, 0.02, 0.2, 0.22], [0.0, 1.0, 1.0, 0.0]))


def chip_history(rho: np.ndarray) -> np.ndarray:
    model = HeatConduction(rectangle(30, 30, 1.0, 1.0))
    model.fix(lambda p: np.isclose(p[:, 0], 0.0) & (np.abs(p[:, 1] - 0.5) < 0.05 + 1e-9))
    chip = lambda p: (p[:, 0] > 0.9) & (np.abs(p[:, 1] - 0.5) < 0.1)  # noqa: E731
    model.heat_source(10.0, cells=chip, name="Q")
    free = model.free_dofs
    K = model.stiffness(scale=1e-3 + (1 - 1e-3) * rho**3).tocsr()
    M = model.mass(density=rho).tocsr()
    f = np.asarray(model.load_vector())[free]
    probe = int(np.flatnonzero(np.all(np.isclose(model.mesh.points, [1.0, 0.5]), axis=1))[0])
    at = int(np.flatnonzero(free == probe)[0])
    T = [np.zeros(free.size)]
    T.append(spla.spsolve((M + DT * K).tocsc(), M @ T[0] + DT * pulse(DT) * f))
    step = spla.factorized((1.5 * M + DT * K).tocsc())
    for n in range(2, STEPS + 1):
        T.append(step(2 * M @ T[-1] - 0.5 * M @ T[-2] + DT * pulse(n * DT) * f))
    return np.array([temperatures[at] for temperatures in T])


def test_pulsed_heatsink_histories(tmp_path, capsys):
    numbers = load_example("pulsed_heatsink").main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    peaks = {}
    for name in ("initial", "optimized"):
        match = re.search(rf"{name} design: chip temperature peaks at ([\d.]+) at t = "
                          rf"([\d.]+)", printed)
        reference = chip_history(numbers["initial_density" if name == "initial" else
                                         "density"])
        np.testing.assert_allclose(numbers["histories"][name], reference, atol=1e-9)
        peaks[name] = float(match.group(1))
        assert peaks[name] == pytest.approx(reference.max(), abs=6e-5)
        assert float(match.group(2)) == pytest.approx(DT * np.argmax(reference), abs=1e-9)
    assert peaks["optimized"] < peaks["initial"] / 3
    # KS over the levels: above the largest value, by at most log(26)/50.
    peak = numbers["histories"]["optimized"].max()
    assert peak < numbers["objective"] < peak + np.log(STEPS + 1) / 50
    assert numbers["volume"] <= 0.4 + 1e-3
    for picture in numbers["pictures"]:
        pixels = imread(picture)
        assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100, picture
