"""jax-fem's own hyperelasticity example against fesens on the same discrete problem.

The peer runs the example as jax-fem ships it (``peers/jaxfem_example.py``: its 20³ HEX8
unit cube meshed by gmsh, its energy ``μ/2 (J^(-2/3) I_C − 3) + κ/2 (J − 1)²`` with ``E = 10,
ν = 0.3``, its supports: ``u = 0`` at ``x = 1`` and the face ``x = 0`` twisted, its solver:
one Newton solve from ``u = 0`` to ``‖R‖ < 1e-6``, PETSc BiCGStab(ℓ)/ILU linear solves) in
the peers' environment (``make peers``), and its ``ad_wrapper`` gradient of ``J = ½ Σ u²``
with respect to a per-cell factor ``θ`` of the energy at ``θ = 1``. fesens then solves the
same discrete problem in a fresh process of its own: jax-fem's mesh (points and cells as
gmsh numbered them), the law ``mooney-rivlin`` with ``c10 = μ/2``, ``c01 = 0``, ``κ`` (the
same energy), the same prescribed values, one load step to the same absolute tolerance
``‖R‖ ≤ 1e-6`` (``rtol = 0``, no step-size test), its default line search; the gradient
of the same ``J`` in the per-cell ``scale`` (``θ``) by its adjoint. fesens runs once per
tangent backend of ``--solvers``: ``cholmod``, and ``auto`` (the default for this physics:
CHOLMOD, and LU for each factorization that finds the tangent not positive definite, as the
twisted cube's first iterates do; the LU is SuperLU, whose fill-in on a 3D mesh is large).

Each side measures its set-up, a cold forward and gradient (JAX compiles in its cold ones),
``--repeats`` warm ones (medians) and the peak resident memory of the warm ones above what
was resident before them, and the process's peak. The table gives both, their ratios
(fesens / jax-fem), and how far fesens's displacement and gradient are from jax-fem's (max
difference over the max entry).

    python benchmarks/bench_jaxfem_example.py [--n 20] [--repeats 1] [--solvers cholmod auto]
        [--record]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import (
    RESULT_PREFIX,
    load_average,
    load_line,
    machine_lines,
    megabytes,
    peak_rss_mb,
    peers_python,
    ratio,
    record,
    release_free_memory,
    reset_peak_rss,
    resident_mb,
    run_case,
    seconds,
    serve_case,
    table,
)

PEER_SCRIPT = Path(__file__).resolve().parent / "peers" / "jaxfem_example.py"
#: jax-fem's absolute Newton tolerance (its ``solver``'s ``tol``; its relative one, 1e-8 of
#: the first residual, is looser here).
ATOL = 1e-6
TIMEOUT = 3600.0


def fesens_model(points: np.ndarray, cells: np.ndarray):
    """fesens's model of the example on jax-fem's mesh: the same energy, the same supports."""
    from fesens.mesh.mesh import Mesh
    from fesens.physics.hyperelasticity import FiniteStrainElasticity

    sys.path.insert(0, str(PEER_SCRIPT.parent))
    from jaxfem_example import KAPPA, LENGTH, MU, TWIST

    model = FiniteStrainElasticity(Mesh(points, cells, "hex8"), law="mooney-rivlin",
                                   c10=MU / 2.0, c01=0.0, kappa=KAPPA)
    at = np.isclose  # the example's face predicates, atol 1e-5

    def twisted(x):
        y, z = x[:, 1] - 0.5, x[:, 2] - 0.5
        return np.stack([0.0 * y, (0.5 + y * np.cos(TWIST) - z * np.sin(TWIST) - x[:, 1]) / 2,
                         (0.5 + y * np.sin(TWIST) + z * np.cos(TWIST) - x[:, 2]) / 2], axis=1)

    model.fix(lambda x: at(x[:, 0], 0.0, atol=1e-5), value=twisted)
    model.fix(lambda x: at(x[:, 0], LENGTH, atol=1e-5))
    return model


def fesens_case(npz: str, repeats: int, out: str, solver: str) -> dict:
    """fesens's side with the tangent backend ``solver``, in its own process: measured as
    the peer measures itself."""
    import fesens.physics.hyperelasticity  # noqa: F401  (imports are not the set-up)
    from fesens.ad import value_and_grad

    data = np.load(npz)
    start = time.perf_counter()
    model = fesens_model(data["points"], data["cells"])
    newton = {"rtol": 0.0, "atol": ATOL, "stol": 0.0}
    result = {"code": f"fesens ({solver})", "setup_s": time.perf_counter() - start}
    theta = np.ones(model.mesh.n_cells)
    reports = []

    def forward():
        solution = model.solve(newton=newton, warm_start=False, solver=solver)
        reports.append(solution.report)
        return solution.u

    def objective(scale):
        solution = model.solve(scale=scale, newton=newton, warm_start=False, solver=solver)
        return 0.5 * np.sum(solution.u ** 2)

    def gradient():
        value, grad = value_and_grad(objective)(theta)
        return float(value), np.asarray(grad)

    for name, fn in (("forward", forward), ("gradient", gradient)):
        start = time.perf_counter()
        fn()
        result[f"{name}_cold_s"] = time.perf_counter() - start
    peaks = [peak_rss_mb()]
    result["resident_mb"] = resident_mb()
    for name, fn in (("forward", forward), ("gradient", gradient)):
        release_free_memory()
        before = resident_mb()
        reset_peak_rss()
        times = []
        for _ in range(max(repeats, 1)):
            start = time.perf_counter()
            value = fn()
            times.append(time.perf_counter() - start)
        result[f"{name}_s"] = float(np.median(times))
        result[f"{name}_peak_mb"] = peak_rss_mb() - before
        peaks.append(peak_rss_mb())
        result[name] = value
    result["process_peak_mb"] = max(peaks)
    result["iterations"] = reports[-1].iterations
    result["cutbacks"] = len(reports[-1].cutbacks)
    result["fallbacks"] = reports[-1].fallbacks
    u, (result["objective"], grad) = result.pop("forward"), result.pop("gradient")
    np.savez(out, u=u, gradient=grad)
    return result


def _peer(n: int, repeats: int, out: Path) -> dict:
    command = [str(peers_python()), str(PEER_SCRIPT), "--n", str(n), "--repeats",
               str(repeats), "--out", str(out)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": str(exc)}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1]}


def _difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a.ravel() - b.ravel())) / np.max(np.abs(b)))


def report(peer: dict, own: list[dict], n: int, header: list[str]) -> str:
    """The Markdown section: times and memory of each code, fesens's over jax-fem's."""
    rows = []
    for label, key, fmt in (
            ("set-up", "setup_s", seconds), ("forward, cold", "forward_cold_s", seconds),
            ("forward, warm", "forward_s", seconds),
            ("gradient, cold", "gradient_cold_s", seconds),
            ("gradient, warm", "gradient_s", seconds),
            ("forward peak above resident (MiB)", "forward_peak_mb", megabytes),
            ("gradient peak above resident (MiB)", "gradient_peak_mb", megabytes),
            ("process peak (MiB)", "process_peak_mb", megabytes)):
        rows.append([label, fmt(peer[key]),
                     *(fmt(case.get(key)) for case in own),
                     *(ratio(case.get(key), peer[key]) for case in own)])
    codes = [case["code"] for case in own]
    notes = [f"{case['code']}: {case['iterations']} Newton iterations, {case['cutbacks']} "
             f"cut-backs, {case['fallbacks']} LU fallbacks; J = ½ Σ u² = "
             f"{case['objective']:.12g} (jax-fem {peer['objective']:.12g}); max |u − "
             f"u_jax-fem| / max |u_jax-fem| = {case['u_difference']:.2g}, the gradient's "
             f"{case['gradient_difference']:.2g}" if "error" not in case
             else f"{case['code']}: {case['error']}" for case in own]
    versions = ", ".join(f"{k} {v}" for k, v in peer["versions"].items())
    return "\n".join([
        f"## bench_jaxfem_example.py: jax-fem's hyperelasticity example ({n}³ HEX8, "
        "twisted face) and fesens on it\n", *header, f"peer: {versions}\n",
        table(["", "jax-fem", *codes, *(f"{c} / jax-fem" for c in codes)], rows), "",
        *notes])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=20, help="cells per edge (the example: 20)")
    parser.add_argument("--repeats", type=int, default=1, help="warm calls per quantity")
    parser.add_argument("--solvers", nargs="+", default=["cholmod", "auto"],
                        help="fesens's tangent backends, one case each")
    parser.add_argument("--record", action="store_true", help="append to RESULTS.md")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        serve_case({"fesens": fesens_case}, json.loads(args.case))
        return
    loads = [load_average()]
    header = machine_lines(("numpy", "scipy", "scikit-sparse"))
    with tempfile.TemporaryDirectory() as folder:
        peer_out = Path(folder) / "jaxfem.npz"
        peer = _peer(args.n, args.repeats, peer_out)
        if "error" in peer:
            sys.exit(f"jax-fem's example failed (is `make peers` done?): {peer['error']}")
        theirs, own = np.load(peer_out), []
        for solver in args.solvers:
            out = Path(folder) / f"fesens-{solver}.npz"
            case = run_case(__file__, "fesens", str(peer_out), args.repeats, str(out), solver,
                            timeout=TIMEOUT)
            case.setdefault("code", f"fesens ({solver})")
            if "error" not in case:
                ours = np.load(out)
                case["u_difference"] = _difference(ours["u"], theirs["u"])
                case["gradient_difference"] = _difference(ours["gradient"], theirs["gradient"])
            own.append(case)
    loads.append(load_average())
    record(report(peer, own, args.n, [*header, load_line(loads)]), args.record)


if __name__ == "__main__":
    main()
