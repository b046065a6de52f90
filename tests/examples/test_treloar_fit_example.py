"""examples/treloar_fit.py: Treloar's (1944) data as published, the Mooney–Rivlin fit by
fesens gradients through homogeneous solves against the incompressible closed form (and
its shift with the bulk modulus), the Taylor rate of the objective, and the Ogden law's
homogeneous solves and their per-cube Jacobian against closed forms and differences."""

import re

import numpy as np
import pytest
from example_helpers import load_example


@pytest.fixture(scope="module")
def example():
    return load_example("treloar_fit")


def test_treloar_data_are_the_published_digits(example):
    data = example.load_data()
    assert [data[m][0].size for m in example.MODES] == [24, 16, 13]
    # Chongran-Zhao/Hyperelastic-fitting, Treloar_1944/UT/stress_stretch.txt (MPa =
    # kg/cm² × 0.0981): its first, a middle and its last uniaxial point
    uniaxial = dict(zip(*data["uniaxial"], strict=True))
    for stretch, mpa in ((1.02, 0.0255), (3.57, 1.0497), (7.60, 6.3176)):
        assert uniaxial[stretch] / example.KGF_PER_CM2 * 0.0981 == pytest.approx(mpa, abs=1e-4)
    # its pure shear points, divided by 0.0981, are the kg/cm² of the file
    shear = dict(zip(*data["pure_shear"], strict=True))
    for stretch, mpa in ((1.03, 0.0667), (2.38, 0.7652), (4.97, 1.8050)):
        assert shear[stretch] / example.KGF_PER_CM2 * 0.0981 == pytest.approx(mpa, abs=1e-4)
    # Ogden (1972, Proc. R. Soc. Lond. A 326, 565), as quoted in MPa
    assert example.OGDEN_1972 == (0.63, 1.3, 0.0012, 5.0, -0.01, -2.0)


def test_treloar_example_fits_mooney_rivlin_through_homogeneous_solves(example, tmp_path,
                                                                        capsys):
    numbers = example.main(["--fast", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    mr = numbers["mooney-rivlin"]
    # Mooney–Rivlin's incompressible stresses are linear in (c10, c01): the closed-form
    # least squares is the linear one
    data = {m: (lam[::2], p[::2]) for m, (lam, p) in example.load_data().items()}
    design = np.concatenate([np.column_stack([
        example.incompressible_stress("mooney-rivlin", m, data[m][0], e) for e in np.eye(2)])
        for m in example.MODES])
    linear = np.linalg.lstsq(design, np.concatenate([data[m][1] for m in example.MODES]),
                             rcond=None)[0]
    np.testing.assert_allclose(mr["closed_form"], linear, rtol=1e-8)
    # fesens at κ = 4e4 MPa: the closed form's constants to 1e-4, and the difference is
    # the compressibility's, proportional to 1/κ
    np.testing.assert_allclose(mr["fitted"], linear, rtol=1e-3, atol=1e-5)
    near, soft = mr["kappa_shift"]
    np.testing.assert_allclose(soft, 10 * near, rtol=0.05)
    assert mr["stress_difference"] < 5e-4
    assert numbers["rate"] == pytest.approx(2.0, abs=0.05)
    # the least-squares Ogden improves on Ogden's hand fit in the same objective
    sum_of_squares = {key: sum(numbers[key]["rms"][m] ** 2 * data[m][0].size
                               for m in example.MODES) for key in ("ogden-3", "ogden-1972")}
    assert sum_of_squares["ogden-3"] < sum_of_squares["ogden-1972"]
    # the fesens Ogden fit runs (seconds) and stays near the incompressible closed form's
    ogden = numbers["ogden-3"]
    np.testing.assert_allclose(ogden["fitted"], ogden["closed_form"], rtol=5e-2, atol=1e-5)
    assert ogden["stress_difference"] < 2e-3
    assert f"c10 = {mr['fitted'][0]:.5g}" in printed
    rate = re.search(r"convergence rate: ([\d.]+)", printed)
    assert float(rate.group(1)) == pytest.approx(numbers["rate"], abs=1e-3)
    pytest.importorskip("matplotlib")
    assert (tmp_path / "treloar_fit.png").is_file()


@pytest.mark.slow
def test_treloar_ogden_homogeneous_solves_match_the_closed_form(example):
    modes = np.array(example.MODES)
    stretches = np.array([1.8, 1.4, 1.6])
    tests = example.HomogeneousTests(modes, stretches, "ogden-3")
    x = np.array(example.OGDEN_1972)
    closed = np.array([example.incompressible_stress("ogden-3", m, lam, x)
                       for m, lam in zip(modes, stretches, strict=True)])
    np.testing.assert_allclose(tests.stresses(x, steps=2), closed, rtol=2e-4)
    # the per-cube Jacobian of one pullback against central differences of the solves
    per_cube = np.repeat(x[:, None], 3, axis=1)
    stresses, pull = example.vjp(lambda theta: tests.stresses(theta, steps=2), per_cube)
    jacobian = pull(np.ones(3)).T
    h = 1e-4  # Newton's tolerance leaves ~1e-10 of noise in each solve
    for k in (0, 1, 5):
        step = np.zeros_like(x)
        step[k] = h * max(abs(x[k]), 1.0)
        difference = (tests.stresses(x + step, steps=2)
                      - tests.stresses(x - step, steps=2)) / (2 * step[k])
        np.testing.assert_allclose(jacobian[:, k], difference, rtol=1e-4)
