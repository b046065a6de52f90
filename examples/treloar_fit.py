"""Mooney–Rivlin and Ogden constants fitted to Treloar's (1944) rubber data by least
squares, with fesens gradients through homogeneous-deformation solves.

Treloar's data (``examples/data/treloar_1944.csv``: uniaxial tension, equibiaxial tension
and pure shear of vulcanised natural rubber, stretch against nominal stress) are fitted
with the built-in laws ``mooney-rivlin`` and ``ogden-3``
(:mod:`fesens.physics.rubber_laws`). All data points are one Newton solve of a
:class:`~fesens.physics.hyperelasticity.FiniteStrainElasticity` model on a mesh of
disconnected unit hex8 cubes, one per data point: the stretch is prescribed on the faces
normal to x (and to y in equibiaxial tension), the face ``z = 0`` (uniaxial: also ``y =
0``) is held on its plane, and the other faces are free of traction; pure shear holds
both z faces (stretch 1). The deformation is homogeneous, and the nominal stress
``P₁₁`` is the x reaction of the face ``x = 1`` (area 1): the internal forces of the
traced solution at its nodes. The bulk modulus ``κ`` (:data:`KAPPA`, about 10⁵ times the
shear modulus) makes ``J ≈ 1``: the stresses are those of the incompressible law to
about 2·10⁻⁴, and the fitted constants move with ``1/κ`` (printed at ``κ`` and ``κ/10``).

The residuals are the absolute nominal-stress errors of the three modes together. Their
Jacobian in the constants comes from fesens's adjoint: with the constants given per cube
(a cube's stress depends on its own cube's constants only), one pullback of the traced
solve gives every cube's derivatives, and :func:`scipy.optimize.least_squares` takes it
as ``jac``. The example

1. fits Mooney–Rivlin's ``(c₁₀, c₀₁)`` and compares them with the same least squares on
   the closed-form incompressible stresses (MR uniaxial ``P = 2 (λ − λ⁻²)(c₁₀ +
   c₀₁/λ)``, …: :func:`incompressible_stress`), and the fesens stresses with the closed
   form;
2. prints the Taylor test of the objective's gradient in ``(c₁₀, c₀₁)`` (rate 2);
3. fits the three Ogden pairs ``(μ_p, α_p)``: the closed form from Ogden's (1972)
   constants, then fesens from there (seconds), and prints the errors of Ogden's own
   constants, which he fitted by eye;
4. prints the table of the data and the fitted curves, and draws ``treloar_fit.png``
   when matplotlib is installed.

Run: ``python examples/treloar_fit.py [--fast] [--out DIR]`` (``--fast``, or
``FESENS_EXAMPLES_FAST=1``: every second data point).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from fesens.ad import taylor_test, vjp
from fesens.mesh import Mesh
from fesens.physics.hyperelasticity import FiniteStrainElasticity

DATA = Path(__file__).resolve().parent / "data" / "treloar_1944.csv"
#: MPa per kgf/cm² (Treloar's unit).
KGF_PER_CM2 = 0.0980665
MODES = ("uniaxial", "equibiaxial", "pure_shear")
#: The bulk modulus (MPa) of ``U = κ/2 (J − 1)²``: about 10⁵ times the fitted μ₀.
KAPPA = 40000.0
#: Ogden (1972, Proc. R. Soc. Lond. A 326, 565, §5), fitted to Treloar's data by hand, as
#: usually quoted in MPa: (μ₁, α₁, μ₂, α₂, μ₃, α₃).
OGDEN_1972 = (0.63, 1.3, 0.0012, 5.0, -0.01, -2.0)
LAWS = {"mooney-rivlin": ("c10", "c01"),
        "ogden-3": ("mu1", "alpha1", "mu2", "alpha2", "mu3", "alpha3")}
# VTK order of a hex8's corners on the unit cube
_CORNERS = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],
                     [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], dtype=float)


def load_data(path: Path = DATA) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{mode: (stretches (n,), nominal stresses (n,) in MPa)}`` of the data file."""
    rows = [line.split(",") for line in path.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith(("#", "mode"))]
    return {mode: (np.array([float(r[1]) for r in rows if r[0] == mode]),
                   KGF_PER_CM2 * np.array([float(r[2]) for r in rows if r[0] == mode]))
            for mode in MODES}


# ------------------------------------------------------------------ the fesens solves
class HomogeneousTests:
    """The tests at all data points as one model: a mesh of disconnected unit cubes (cube
    k at ``x = 2k``) of the modes ``modes[k]`` at the stretches ``stretches[k]``, one
    Newton solve for all; the nominal stresses ``P₁₁`` ``(n,)`` traced in the law's
    constants (scalars, or per cube ``(n,)``)."""

    def __init__(self, modes, stretches, law: str, kappa: float = KAPPA):
        self.modes, self.stretches = np.asarray(modes), np.asarray(stretches, dtype=float)
        self.law, n = law, self.stretches.size
        offsets = 2.0 * np.repeat(np.arange(n), 8)[:, None] * np.array([1.0, 0.0, 0.0])
        points = np.tile(_CORNERS, (n, 1)) + offsets
        mesh = Mesh(points, np.arange(8 * n).reshape(n, 8), "hex8")
        local = points - offsets
        initial = {key: 1.0 for key in LAWS[law]}  # each solve gives its constants
        self.model = FiniteStrainElasticity(mesh, law=law, kappa=kappa, **initial)

        def cubes_in(mode):  # nodes of the cubes of a mode, as a predicate
            return lambda p: self.modes[np.floor(p[:, 0] / 2.0).astype(int)] == mode

        self.model.fix(lambda p: np.ones(len(p), dtype=bool), "x")
        self.model.fix(lambda p: (p[:, 1] < 0.5) | cubes_in("equibiaxial")(p), "y")
        self.model.fix(lambda p: (p[:, 2] < 0.5) | cubes_in("pure_shear")(p), "z")
        stretch = np.repeat(self.stretches, 8)
        target = np.zeros((8 * n, 3))
        target[:, 0] = (stretch - 1.0) * local[:, 0]
        target[:, 1] = np.where(np.repeat(self.modes == "equibiaxial", 8),
                                (stretch - 1.0) * local[:, 1], 0.0)
        dofs = self.model.dofmap.node_dofs(np.arange(8 * n), [0, 1, 2])
        values = np.zeros(self.model.dofmap.n_dofs)
        values[dofs] = target
        self.dirichlet = values[self.model.constrained_dofs]
        self.loaded = dofs[:, 0].reshape(n, 8)[:, _CORNERS[:, 0] == 1.0]  # x dofs at x = 1

    def stresses(self, x, steps: int = 8):
        """``P₁₁`` ``(n,)`` in MPa of the law's constants ``x`` ``(n_constants,)`` or
        ``(n_constants, n)`` (traced when they are)."""
        constants = {key: x[i] for i, key in enumerate(LAWS[self.law])}
        solution = self.model.solve(dirichlet=self.dirichlet, steps=steps, **constants)
        forces = self.model.internal_forces(solution.u, self.model.material_fields(**constants))
        return np.sum(forces[self.loaded], axis=1)


class TreloarFit:
    """The least-squares problem of one law on the data of all three modes."""

    def __init__(self, law: str, data: dict, kappa: float = KAPPA):
        self.law = law
        self.tests = HomogeneousTests(np.concatenate([[m] * data[m][0].size for m in MODES]),
                                      np.concatenate([data[m][0] for m in MODES]), law, kappa)
        self.observed = np.concatenate([data[m][1] for m in MODES])

    def residuals(self, x):
        """Model minus observed nominal stresses (MPa), all modes, ``(n_data,)``."""
        return self.tests.stresses(x) - self.observed

    def objective(self, x):
        """``½ Σ r²`` (traced in ``x``)."""
        r = self.residuals(x)
        return 0.5 * np.sum(r * r)

    def residuals_and_jacobian(self, x) -> tuple[np.ndarray, np.ndarray]:
        """The residuals ``(n_data,)`` and their Jacobian ``(n_data, n_constants)``.

        The cubes are not connected, so a cube's stress depends on its own constants
        only: with the constants given per cube, ``θ`` ``(n_constants, n_data)``, one
        pullback of ``Σ_i P_i`` (one transposed solve) gives ``∂P_i/∂θ_ki`` of every cube
        at once, the Jacobian's rows."""
        per_cube = np.repeat(np.asarray(x, dtype=float)[:, None], self.observed.size, 1)
        stresses, pull = vjp(self.tests.stresses, per_cube)
        return stresses - self.observed, pull(np.ones_like(stresses)).T

    def fit(self, start) -> tuple[np.ndarray, object]:
        """The constants minimizing ``½ Σ r²`` from ``start`` by
        :func:`scipy.optimize.least_squares` (trust region reflective) with the fesens
        Jacobian; returns them and scipy's result."""
        cache = {}

        def evaluate(x):
            key = tuple(np.asarray(x).tolist())
            if key not in cache:
                cache.clear()
                cache[key] = self.residuals_and_jacobian(x)
            return cache[key]

        result = least_squares(lambda x: evaluate(x)[0], np.asarray(start, dtype=float),
                               jac=lambda x: evaluate(x)[1], x_scale="jac",
                               xtol=1e-10, ftol=1e-10, gtol=1e-10)
        return result.x, result


# ------------------------------------------------------------------ closed forms
def incompressible_stress(law: str, mode: str, stretch, x):
    """The nominal stress ``P₁₁`` of the incompressible law in ``mode`` (no finite
    elements): ``F = diag(λ, λ^{-1/2}, λ^{-1/2})``, ``diag(λ, λ, λ⁻²)``, ``diag(λ, 1,
    λ⁻¹)``; Mooney–Rivlin ``P = 2 (λ − λ⁻²)(c₁₀ + c₀₁/λ)``, ``2 (λ − λ⁻⁵)(c₁₀ + c₀₁ λ²)``,
    ``2 (λ − λ⁻³)(c₁₀ + c₀₁)``; Ogden ``Σ_p μ_p (λ^{α_p − 1} − λ^{−k α_p − 1})`` with ``k
    = 1/2, 2, 1``."""
    lam = np.asarray(stretch, dtype=float)
    if law == "mooney-rivlin":
        c10, c01 = x
        return {"uniaxial": 2 * (lam - lam ** -2) * (c10 + c01 / lam),
                "equibiaxial": 2 * (lam - lam ** -5) * (c10 + c01 * lam ** 2),
                "pure_shear": 2 * (lam - lam ** -3) * (c10 + c01)}[mode]
    k = {"uniaxial": 0.5, "equibiaxial": 2.0, "pure_shear": 1.0}[mode]
    return sum(mu * (lam ** (alpha - 1) - lam ** (-k * alpha - 1))
               for mu, alpha in zip(x[::2], x[1::2], strict=True))


def closed_form_fit(law: str, data: dict, start) -> np.ndarray:
    """The same least-squares problem with :func:`incompressible_stress` (finite
    differences for the Jacobian): the reference the fesens fit must reproduce."""
    def residuals(x):
        return np.concatenate([incompressible_stress(law, m, data[m][0], x) - data[m][1]
                               for m in MODES])
    return least_squares(residuals, np.asarray(start, dtype=float), x_scale="jac",
                         xtol=1e-14, ftol=1e-14, gtol=1e-14).x


def rms(law: str, data: dict, x) -> dict[str, float]:
    """Root-mean-square stress error (MPa) per mode of the incompressible law."""
    return {m: float(np.sqrt(np.mean((incompressible_stress(law, m, data[m][0], x)
                                      - data[m][1]) ** 2))) for m in MODES}


# ------------------------------------------------------------------ output
def print_table(data: dict, predictions: dict) -> None:
    """The data and the predictions ``{name: {mode: (n,)}}`` (MPa), row by row."""
    print(f"{'mode':<12} {'stretch':>7} {'data':>8} "
          + " ".join(f"{name:>13}" for name in predictions) + "   (MPa)")
    for mode in MODES:
        for i, (lam, p) in enumerate(zip(*data[mode], strict=True)):
            print(f"{mode:<12} {lam:7.3f} {p:8.4f} "
                  + " ".join(f"{values[mode][i]:13.4f}" for values in predictions.values()))


def draw(data: dict, curves: dict, path: Path) -> Path | None:
    """The data points and the curves ``{name: (law, constants)}`` of the three modes
    (the incompressible closed forms); None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, mode in zip(axes, MODES, strict=True):
        lam, p = data[mode]
        curve = np.linspace(1.0, lam.max(), 200)
        ax.plot(lam, p, "ko", ms=4, label="Treloar 1944")
        for (name, (law, x)), style in zip(curves.items(), ("C0-", "C1--", "C2:"),
                                           strict=True):
            ax.plot(curve, incompressible_stress(law, mode, curve, x), style, label=name)
        ax.set(title=mode.replace("_", " "), xlabel="stretch λ",
               ylabel="nominal stress (MPa)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _report(law: str, x, data: dict, fe_stresses) -> dict:
    """Print and return the constants, the rms errors and the largest relative difference
    of the fesens stresses from the closed form at ``x``."""
    closed = np.concatenate([incompressible_stress(law, m, data[m][0], x) for m in MODES])
    errors = rms(law, data, x)
    print(f"  {', '.join(f'{k} = {v:.5g}' for k, v in zip(LAWS[law], x, strict=True))} (MPa)")
    print(f"  rms stress error (MPa): {', '.join(f'{m} {e:.4f}' for m, e in errors.items())}")
    if fe_stresses is None:
        return {"rms": errors}
    difference = float(np.max(np.abs(fe_stresses - closed) / np.abs(closed)))
    print(f"  fesens P11 against the incompressible closed form: max relative difference "
          f"{difference:.2e}")
    return {"rms": errors, "stress_difference": difference}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true",
                        help="every second data point")
    parser.add_argument("--out", default="results/examples/treloar_fit",
                        help="folder of treloar_fit.png")
    args = parser.parse_args(argv)
    fast = args.fast or bool(os.environ.get("FESENS_EXAMPLES_FAST"))
    data = load_data()
    if fast:
        data = {m: (lam[::2], p[::2]) for m, (lam, p) in data.items()}
    split = np.cumsum([data[m][0].size for m in MODES])[:-1]
    numbers: dict = {}

    print(f"Mooney–Rivlin, fesens (κ = {KAPPA:g} MPa), least squares from (0.2, 0.01):")
    began = time.perf_counter()
    problem = TreloarFit("mooney-rivlin", data)
    mr, result = problem.fit([0.2, 0.01])
    fe_mr = problem.tests.stresses(mr)
    numbers["mooney-rivlin"] = {"fitted": mr, **_report("mooney-rivlin", mr, data, fe_mr)}
    print(f"  {result.nfev} evaluations, {time.perf_counter() - began:.1f} s")
    reference = closed_form_fit("mooney-rivlin", data, [0.2, 0.01])
    numbers["mooney-rivlin"]["closed_form"] = reference
    print(f"  the incompressible closed form fitted alike: c10 = {reference[0]:.5g}, "
          f"c01 = {reference[1]:.5g}")
    softer, _ = TreloarFit("mooney-rivlin", data, KAPPA / 10).fit(mr)
    numbers["mooney-rivlin"]["kappa_shift"] = [mr - reference, softer - reference]
    print(f"  fit minus closed form at κ = {KAPPA:g}: {np.array2string(mr - reference)}; "
          f"at κ = {KAPPA / 10:g}: {np.array2string(softer - reference)}")
    print("Taylor test of d(½ Σ r²)/d(c10, c01):")
    numbers["rate"] = taylor_test(problem.objective, mr + [0.05, 0.02]).rate

    print("Ogden (3 terms), the incompressible closed form fitted from Ogden 1972's constants:")
    ogden = closed_form_fit("ogden-3", data, OGDEN_1972)
    numbers["ogden-3"] = {"closed_form": ogden, **_report("ogden-3", ogden, data, None)}
    print(f"Ogden (3 terms), fesens (κ = {KAPPA:g} MPa), least squares from there:")
    began = time.perf_counter()
    problem = TreloarFit("ogden-3", data)
    fitted, result = problem.fit(ogden)
    fe_ogden = problem.tests.stresses(fitted)
    numbers["ogden-3"].update(fitted=fitted, **_report("ogden-3", fitted, data, fe_ogden))
    print(f"  {result.nfev} evaluations, {time.perf_counter() - began:.1f} s")
    ogden = fitted
    print("Ogden 1972 (fitted by hand):")
    numbers["ogden-1972"] = _report("ogden-3", np.array(OGDEN_1972), data, None)

    curves = {"Mooney–Rivlin": ("mooney-rivlin", mr), "Ogden": ("ogden-3", ogden),
              "Ogden 1972": ("ogden-3", np.array(OGDEN_1972))}
    print_table(data, {name: dict(zip(MODES, np.split(
        np.concatenate([incompressible_stress(law, m, data[m][0], x) for m in MODES]),
        split), strict=True)) for name, (law, x) in curves.items()})
    picture = draw(data, curves, Path(args.out) / "treloar_fit.png")
    if picture is not None:
        print(f"wrote {picture}")
    return numbers


if __name__ == "__main__":
    main()
