"""Every example runs in fast mode and reproduces its key numbers (scikit-fem's
examples-are-tests), checked against expectations computed independently of the
example's own code path where one exists."""

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import meshio
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from example_helpers import load_example
from matplotlib.image import imread
from PIL import Image

from fesens.ad import value_and_grad
from fesens.objectives import Differentiable, stress_pnorm
from fesens.opt import SIMP
from fesens.study import read_results

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


load = load_example


def test_root_finding_converges_to_known_roots():
    rows = {row["problem"]: row for row in load("root_finding").run()}
    power = rows["5x^10 - 5120"]
    assert power["halley"] == pytest.approx(2.0, rel=1e-14)
    assert power["halley_iterations"] < power["newton_iterations"]
    for row in rows.values():
        assert row["residual"] < 1e-12
        assert row["newton"] == pytest.approx(row["halley"], rel=1e-12)
    # cos x = 10 x: the non-zero root of g.
    x = rows["3x^3 (cos x - 10x)"]["halley"]
    assert np.cos(x) == pytest.approx(10 * x, rel=1e-13)


def image(path) -> np.ndarray:
    """The pixels of a PNG (fails if the file is missing or not a PNG)."""
    pixels = imread(path)
    assert pixels.ndim == 3 and min(pixels.shape[:2]) > 100, path
    return pixels


def test_cantilever_compliance_gradient_and_design(tmp_path):
    numbers = load("cantilever_compliance").main(["--fast", "--out", str(tmp_path)])
    # The gradient: remainder of order 2, finite differences, and the uniform design's
    # closed form (the filter keeps x = v uniform, so C = C_solid / s(v)).
    assert numbers["taylor_rate"] == pytest.approx(2.0, abs=0.1)
    assert numbers["fd_error"] < 1e-5
    assert numbers["closed_form_error"] < 1e-8
    s = 1e-9 + 0.4**3 * (1 - 1e-9)  # SIMP 3 at the volume fraction 0.4
    assert numbers["uniform_compliance"] == pytest.approx(numbers["solid_compliance"] / s,
                                                          rel=1e-8)
    assert numbers["max_gradient"] <= 0.0  # more material never makes it softer
    # The design: feasible, much stiffer than the uniform one, never stiffer than the
    # solid, and mirror-symmetric like the problem (load at mid-height).
    assert numbers["volume"] <= 0.4 + 1e-3
    assert numbers["solid_compliance"] < numbers["compliance"] < 3 * numbers["solid_compliance"]
    assert numbers["compliance"] < numbers["uniform_compliance"] / 5
    density = numbers["density"].reshape(30, 60)
    np.testing.assert_allclose(density, density[::-1], atol=1e-6)
    for picture in numbers["pictures"]:
        image(picture)


def test_plate_hole_stress_kirsch_pnorm_and_sensitivities(tmp_path):
    module = load("plate_hole_stress")
    numbers = module.main(["--out", str(tmp_path)])
    # Kirsch: σ_xx = 3σ at the top of the hole (3.03 for this width, nodal averaging loses
    # about 2%), and 1 + a²/2r² + 3a⁴/2r⁴ along the ligament.
    assert numbers["concentration"] == pytest.approx(3.0, rel=0.05)
    assert numbers["ligament_deviation"] < 0.05
    # p-norms: max ≤ ‖σ‖_p ≤ n^(1/p) max, decreasing in p.
    peak, n = numbers["max_von_mises"], len(numbers["gradient"])
    pnorms = [numbers["pnorm"][p] for p in sorted(numbers["pnorm"])]
    for p, value in sorted(numbers["pnorm"].items()):
        assert peak <= value <= n ** (1 / p) * peak
    assert np.all(np.diff(pnorms) < 0)
    # The traced stresses are those of the plain solve: a p-norm at huge p is the max.
    huge = stress_pnorm(Differentiable(module.build()).solve(), p=400.0)
    assert peak * (1 - 1e-12) <= huge <= n ** (1 / 400) * peak
    # Gradient: order-2 Taylor remainder; stresses do not depend on a uniform E scaling.
    assert numbers["taylor_rate"] == pytest.approx(2.0, abs=0.1)
    assert numbers["euler"] < 1e-10
    vtu = meshio.read(numbers["vtu"])
    assert vtu.points.shape[0] == 2857  # meshes/README.md: plate_hole.msh
    cell_data = {name: np.concatenate(blocks) for name, blocks in vtu.cell_data.items()}
    np.testing.assert_allclose(cell_data["d_stress_pnorm_d_E"], numbers["gradient"])
    assert cell_data["von_mises"].max() == pytest.approx(peak)
    assert vtu.point_data["displacement"].shape == (2857, 3)
    image(numbers["png"])


def test_shape_fillet_lowers_the_peak_stress_at_the_same_area(tmp_path):
    module = load("shape_fillet")
    numbers = module.main(["--fast", "--out", str(tmp_path)])
    assert numbers["taylor_rate"] == pytest.approx(2.0, abs=0.1)
    # The initial half bar: D/2 x shoulder + d/2 x narrow length + the fillet's corner
    # piece (1 − π/4) r²; the straight cell edges along the arc add ~1e-5.
    exact = 1.0 * 1.0 + 0.5 * 1.5 + (1 - np.pi / 4) * 0.15**2
    assert numbers["area_before"] == pytest.approx(exact, rel=2e-5)
    assert numbers["area_after"] == pytest.approx(numbers["area_before"], rel=1e-4)
    # Fast mode (12 iterations): p-norm 27 % and peak 33 % lower; never below the nominal
    # stress of the narrow section, which the design cannot change away from the shoulder.
    assert numbers["iterations"] == 12
    assert np.all(np.diff(numbers["history"]) < 0)
    assert numbers["pnorm_after"] < 0.8 * numbers["pnorm_before"]
    assert 1.0 < numbers["max_after"] < 0.75 * numbers["max_before"]
    image(numbers["png"])
    # A step far too large inverts cells: the run stops naming the iteration and cells.
    with pytest.raises(SystemExit, match=r"iteration 1: the shape update inverts \d+ "
                                         r"cell\(s\), ids \[\d+"):
        module.main(["--fast", "--step", "1.0", "--out", str(tmp_path / "inverted")])


def test_inverse_identification_recovers_the_field(tmp_path):
    numbers = load("inverse_identification").main(["--fast", "--out", str(tmp_path)])
    n = numbers["n_data"]
    # The noise is N(0, s²) per datum, so the misfit per datum of the true field is ½ with
    # a standard deviation of ½ √(2/n); a fit with k parameters absorbs some noise:
    # ½ (1 − k/n) is about as low as it can go.
    assert numbers["truth_misfit"] == pytest.approx(0.5, abs=5 * 0.5 * np.sqrt(2 / n))
    floor = 0.5 * (1 - numbers["n_cells"] / n)
    assert floor - 0.05 < numbers["misfit"] < 0.6
    assert numbers["initial_misfit"] / numbers["misfit"] > 1e3
    assert numbers["error"] < 0.15
    assert numbers["error"] < numbers["initial_error"] / 3
    assert numbers["inclusion_modulus"] == pytest.approx(3.0, rel=0.1)
    image(numbers["png"])


def test_gradient_cost_runs_every_grid_and_its_gradient_passes_the_taylor_test(tmp_path):
    """The example's times are printed, not asserted: a loaded machine stretches them at
    will (benchmarks/bench_ad.py measures value_and_grad / forward against its targets)."""
    numbers = load("gradient_cost").main(["--fast", "--out", str(tmp_path)])
    assert numbers["taylor_rate"] == pytest.approx(2.0, abs=0.1)
    rows = numbers["rows"]
    for row in rows:
        assert row["dofs"] == 2 * (row["nx"] + 1) * (row["nx"] // 2 + 1)
    assert [row["nx"] for row in rows] == sorted({row["nx"] for row in rows})
    image(numbers["png"])


def picture_size(path: Path) -> tuple[int, int]:
    with Image.open(path) as image:
        return image.size


def run_script(name: str, out: Path, *extra: str) -> str:
    """``python examples/NAME.py --fast --out OUT`` in a new process: its standard output."""
    done = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), "--fast", "--out",
                           str(out), *extra], capture_output=True, text=True, timeout=300,
                          cwd=out.parent)
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr
    return done.stdout


# ------------------------------------------------------------------ L-bracket, stress
@pytest.fixture(scope="module")
def lbracket(tmp_path_factory):
    """``main(["--fast", ...])``: the module, its designs, the output folder and text."""
    module, out = load("lbracket_stress"), tmp_path_factory.mktemp("lbracket")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        designs = module.main(["--fast", "--out", str(out)])
    return module, designs, out, printed.getvalue()


def test_lbracket_stress_constraint_holds_and_lowers_the_corner_peak(lbracket):
    module, designs, _, _ = lbracket
    plain, aware = designs["compliance"], designs["stress"]
    for design in (plain, aware):
        assert design["volume"] <= module.VOLUME_FRACTION * (1 + 2e-3)
    assert plain["pnorm"] > 1.2 * module.STRESS_LIMIT  # the constraint is active ...
    assert aware["pnorm"] <= module.STRESS_LIMIT * (1 + 1e-2)  # ... and satisfied
    # The compliance design's peak sits at the re-entrant corner (a singularity); the
    # stress-aware one brings it down by a fifth at least, in relaxed and solid stress,
    # and pays for it with compliance.
    assert plain["peak_distance"] < 2.0
    assert aware["max_von_mises"] < 0.8 * plain["max_von_mises"]
    assert aware["max_von_mises_solid"] < 0.8 * plain["max_von_mises_solid"]
    assert aware["compliance"] > plain["compliance"]
    assert 150.0 < plain["compliance"] < 200.0  # N·mm: 175.4 converged


def test_lbracket_stress_numbers_agree_with_a_plain_solve(lbracket):
    """Re-solve each final design with ``model.solve`` and post-process with ``Solution``
    (not the traced objectives the example uses)."""
    module, designs, _, _ = lbracket
    model = module.bracket()
    for design in designs.values():
        rho = design["density"]
        scale = SIMP(3.0)(rho)
        solution = model.solve(scale=scale)
        assert solution.compliance() == pytest.approx(design["compliance"], rel=1e-9)
        relaxed = rho**module.STRESS_EXPONENT * solution.von_mises() / scale
        assert relaxed.max() == pytest.approx(design["max_von_mises"], rel=1e-8)
        pnorm = np.sum(relaxed**module.P_NORM) ** (1 / module.P_NORM)
        assert pnorm == pytest.approx(design["pnorm"], rel=1e-8)


def test_lbracket_stress_prints_and_writes_its_pictures(lbracket):
    _, _, out, stdout = lbracket
    assert "p-norm ≤ 130 MPa" in stdout and "peak von Mises x0." in stdout
    for name in ("design.png", "von_mises.png"):
        width, height = picture_size(out / name)
        assert width > 600 and height > 300
    assert (out / "designs.vtu").stat().st_size > 10_000


# ------------------------------------------------------------------ heat sink
def drawn_fields(monkeypatch) -> dict:
    """The field pictures an example saves, by file name, while still writing them."""
    import fesens.plotting.fields as fields

    drawn, save = {}, fields.save_figure

    def keep(figure, path):
        drawn[Path(path).name] = figure
        return save(figure, path)

    monkeypatch.setattr(fields, "save_figure", keep)
    return drawn


def assert_nodal_up_to_the_titles_peak(figure, values: np.ndarray, peak: str) -> None:
    """The picture draws every nodal value, its title names ``peak`` (the values' largest,
    formatted as the example does) and its color bar ends there."""
    field, bar = figure.axes
    (shaded,) = field.collections
    np.testing.assert_array_equal(shaded.get_array(), values)
    assert peak in field.get_title()
    assert max(bar.get_xlim()) == pytest.approx(values.max())


def test_heatsink_reduces_thermal_compliance_and_balances_heat(tmp_path, capsys, monkeypatch):
    module = load("heatsink")
    drawn = drawn_fields(monkeypatch)
    n = module.main(["--fast", "--out", str(tmp_path)])
    assert_nodal_up_to_the_titles_peak(drawn["temperature.png"], n["temperature"],
                                       f"max {n['temperature'].max():.3g} K")
    assert "thermal compliance reduced x" in capsys.readouterr().out
    assert n["volume"] <= module.VOLUME_FRACTION * (1 + 1e-3)
    assert n["initial_compliance"] / n["compliance"] > 4.0
    # No design with less aluminium beats the all-aluminium plate.
    assert n["solid_compliance"] < n["compliance"] < 2.0 * n["solid_compliance"]
    # The heat-weighted mean temperature C/Q lies below the peak temperature.
    assert n["compliance"] / n["total_heat"] < n["max_temperature"] < n["initial_max_temperature"]
    # Plain re-solve of the final design: same compliance; all the heat leaves at the sink.
    model = module.plate()
    solution = model.solve(scale=SIMP(3.0, minimum=1e-3)(n["density"]))
    assert solution.compliance() == pytest.approx(n["compliance"], rel=1e-9)
    assert solution.reaction_force("sink")[0] == pytest.approx(-n["total_heat"], rel=1e-9)
    # 1e-4 W/mm³ on the unit-thickness square without the hole of radius 10 (polygonal).
    assert n["total_heat"] == pytest.approx(1e-4 * (100.0**2 - np.pi * 10.0**2), rel=2e-3)
    for name in ("design.png", "temperature.png"):
        width, height = picture_size(tmp_path / name)
        assert width > 400 and height > 400
    assert (tmp_path / "design.vtu").is_file()


# ------------------------------------------------------------------ 3D bracket study
def test_bracket_study_fast_table_gradients_and_tornado(tmp_path):
    """As a script: its worker processes get the model from ``__main__``."""
    module = load("bracket_study")
    out = tmp_path / "study"
    stdout = run_script("bracket_study", out)
    assert "8 samples, 0 errors" in stdout
    results = read_results(out / "results.csv")
    assert len(results) == module.FAST_SAMPLES and results.ok().all()
    assert results.parameters == ("E", "nu", "P", "angle")
    assert results.outputs == ("compliance", "tip_deflection", "stress")
    width, height = picture_size(out / "tornado.png")
    assert width > 400 and height > 300
    # The gradients without a closed form (ν, angle) against central differences.
    problem = module.setup()
    sample = {p: float(results.value(p)[0]) for p in results.parameters}
    for parameter, step in (("nu", 1e-5), ("angle", 1e-3)):
        up = module.evaluate(problem, {**sample, parameter: sample[parameter] + step})
        down = module.evaluate(problem, {**sample, parameter: sample[parameter] - step})
        for output in results.outputs:
            central = (float(up[output]) - float(down[output])) / (2 * step)
            assert results.gradient(output, parameter)[0] == pytest.approx(central, rel=1e-6)


# ------------------------------------------------------------------ sparse solve
def test_sparse_solve_gradient_matches_fd_and_beats_it(tmp_path, capsys):
    module = load("sparse_solve_gradient")
    rows = module.main(["--fast", "--out", str(tmp_path)])
    table = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert [int(line[0]) for line in table if line and line[0].isdigit()] == [200, 1000, 10000]
    assert [row["n"] for row in rows] == list(module.FAST_SIZES)
    for row in rows:
        assert row["directional_error"] < 1e-6, row
        if row["fd_measured"]:
            assert row["fd_error"] < 1e-5, row
    # From n = 1000 on, the measured n + 1 solves take far longer than one AD gradient.
    for row in rows:
        if row["n"] >= 1000 and row["fd_measured"]:
            assert row["fd_seconds"] > 10 * row["ad_seconds"], row
    assert (tmp_path / "timings.csv").read_text().count("\n") == len(rows) + 1
    assert picture_size(tmp_path / "timings.png")[0] > 400


def test_sparse_solve_gradient_equals_the_closed_form_adjoint():
    """``∇f`` for ``f = ‖u‖``, ``A u = b``: with ``λ = A⁻ᵀ u / ‖u‖`` and
    ``∂A_ij/∂x_k = ½ A0_ij (δ_ik cos x_i sin x_j + δ_jk sin x_i cos x_j)``,
    ``∂f/∂x_k = −½ cos x_k (λ_k (A0 (sin x ∘ u))_k + u_k (A0ᵀ (sin x ∘ λ))_k)``."""
    module = load("sparse_solve_gradient")
    f = module.SolveNorm(200)
    x = np.random.default_rng(3).uniform(0.5, 1.5, 200)
    p = f.pattern
    A0 = sp.csr_matrix((f.base, p.indices, p.indptr), shape=p.shape)
    s = np.sin(x)
    A = sp.diags(s) @ A0 @ sp.diags(s) * 0.5 + A0
    u = spla.spsolve(A.tocsc(), f.b)
    lam = spla.spsolve(A.T.tocsc(), u / np.linalg.norm(u))
    expected = -0.5 * np.cos(x) * (lam * (A0 @ (s * u)) + u * (A0.T @ (s * lam)))
    value, gradient = value_and_grad(f)(x)
    assert value == pytest.approx(np.linalg.norm(u), rel=1e-12)
    np.testing.assert_allclose(gradient, expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())



# ------------------------------------------------------------------ root finding timings
def test_root_finding_fd_newton_agrees_and_halley_needs_fewer_steps():
    rows = load("root_finding").run()
    for row in rows:
        assert row["fd_newton"] == pytest.approx(row["halley"], rel=1e-9)
        assert row["halley_iterations"] < row["newton_iterations"]
        assert min(row["newton_seconds"], row["halley_seconds"], row["fd_seconds"]) > 0
    assert rows[0]["fd_newton"] == pytest.approx(2.0, rel=1e-10)  # 5 x^10 = 5120


def test_truss_ground_structure_reaches_the_plastic_optimum(tmp_path):
    """The optimized areas against an independent optimum: the minimum-volume plastic
    design of the same ground structure, a linear program (Dorn, Gomory & Greenberg
    1964: min Σ L_e |N_e| subject to equilibrium B N = f), solved here with scipy's
    linprog; the minimum compliance at volume V is then ``(Σ L_e |N_e|)² / (E V)``
    (Hemp, *Optimum Structures*, 1973)."""
    from scipy.optimize import linprog

    module = load("truss_ground_structure")
    numbers = module.main(["--fast", "--out", str(tmp_path)])
    problem = module.build(8)
    model, mesh = problem.model, problem.mesh
    lengths = model.bar_lengths()
    d = (mesh.points[mesh.cells[:, 1]] - mesh.points[mesh.cells[:, 0]]) / lengths[:, None]
    B = np.zeros((model.dofmap.n_dofs, mesh.n_cells))
    for end, sign in ((0, 1.0), (1, -1.0)):
        for axis in range(2):
            B[2 * mesh.cells[:, end] + axis, np.arange(mesh.n_cells)] = sign * d[:, axis]
    free = model.assembler.free
    f = model.load_vector()[free]
    lp = linprog(np.concatenate([lengths, lengths]), A_eq=np.hstack([B[free], -B[free]]),
                 b_eq=-f, bounds=(0, None), method="highs")
    assert lp.status == 0
    optimum = lp.fun**2 / (module.E * numbers["volume_limit"])
    # Measured 2e-5; the tolerance allows for OC's volume bisection (V within 1e-3).
    assert numbers["compliance"] == pytest.approx(optimum, rel=1e-3)
    # Optimality of the design itself: a fully stressed truss, most bars vanished.
    assert numbers["identity_error"] < 1e-5 and numbers["stress_spread"] < 0.02
    assert numbers["volume"] <= numbers["volume_limit"] * (1 + 1e-3)
    assert numbers["active_bars"] < 0.1 * numbers["candidate_bars"]
    # Mirror symmetry of the problem (y -> 1 - y): each bar and its mirror image.
    mirrored = mesh.points * [1, -1] + [0, module.HEIGHT]
    node = {tuple(np.round(p, 9)): i for i, p in enumerate(mesh.points)}
    image_of = [node[tuple(np.round(p, 9))] for p in mirrored]
    bar = {frozenset(b): e for e, b in enumerate(mesh.cells.tolist())}
    partner = [bar[frozenset((image_of[a], image_of[b]))] for a, b in mesh.cells.tolist()]
    np.testing.assert_allclose(numbers["areas"], numbers["areas"][partner], atol=1e-6)
    for picture in numbers["pictures"]:
        image(picture)


def test_convective_heatsink_optimizes_and_differentiates_the_film_coefficient(tmp_path,
                                                                               capsys):
    module = load("convective_heatsink")
    n = module.main(["--fast", "--out", str(tmp_path)])
    assert "thermal compliance reduced x" in capsys.readouterr().out
    assert n["volume"] <= module.VOLUME_FRACTION * (1 + 1e-3)
    assert n["initial_compliance"] / n["compliance"] > 3.0
    assert n["solid_compliance"] < n["compliance"]
    # C = P (mean chip temperature − T∞) for the chip's uniform flux (P = 1 W).
    assert n["compliance"] == pytest.approx(n["chip_temperature"] - module.AMBIENT, rel=0.02)
    # The adjoint dC/dh against the example's central difference; more film, cooler chip.
    assert n["dC_dh"] < 0
    assert n["dC_dh"] == pytest.approx(n["dC_dh_fd"], rel=1e-5)
    # Energy balance of the design: all the chip's heat leaves by convection.
    model = module.plate((48, 24))
    scale = module.SIMP_MODEL(n["density"])
    T = model.solve(scale=scale).temperature
    top = model.mesh.facets("top")
    ends = model.mesh.points[top.facets]
    lengths = np.linalg.norm(ends[:, 1] - ends[:, 0], axis=1)
    heat_out = module.FILM * np.sum(lengths * T[top.facets].mean(axis=1))
    assert heat_out == pytest.approx(module.POWER, rel=1e-9)
    for name in ("design.png", "temperature.png"):
        image(tmp_path / name)


def test_thermal_bracket_stress_is_linear_in_alpha_and_temperature(tmp_path, capsys,
                                                                   monkeypatch):
    drawn = drawn_fields(monkeypatch)
    n = load("thermal_bracket").main(["--out", str(tmp_path)])
    assert n["max_von_mises"] == n["von_mises"].max()
    assert_nodal_up_to_the_titles_peak(drawn["von_mises.png"], n["von_mises"],
                                       f"peak von Mises {n['max_von_mises']:.3g} MPa")
    assert_nodal_up_to_the_titles_peak(drawn["temperature.png"], n["temperature"], "")
    assert "peak von Mises (SPR)" in capsys.readouterr().out
    assert n["min_temperature"] == pytest.approx(20.0) and n["max_temperature"] == 220.0
    # σ is linear in α and in T − T_ref: α dJ/dα = J = (T_hot − 20) dJ/dT_hot.
    assert 1.2e-5 * n["dJ_dalpha"] == pytest.approx(n["J"], rel=1e-10)
    assert 200.0 * n["dJ_dhot"] == pytest.approx(n["J"], rel=1e-10)
    assert n["dJ_dhot"] == pytest.approx(n["dJ_dhot_fd"], rel=1e-7)
    assert 10.0 < n["max_von_mises"] < n["J"]
    for name in ("temperature.png", "von_mises.png"):
        image(tmp_path / name)
