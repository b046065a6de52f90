"""AMG tuning benchmark: smoothed aggregation on unstructured 3D elasticity.

A box ``[0, 2] x [0, 1] x [0, 1]`` meshed by Gmsh with unstructured tetrahedra (tet4 and
tet10), clamped at ``x = 0``, a unit downward traction at ``x = 2``, E = 1, ν = 0.3, with
the Young's modulus of each cell scaled by a SIMP density ``1e-3 + (1 - 1e-3) ρ³`` of a
topology-optimization-like iterate: ``ρ`` a smooth random field (a few random cosines of
the cell centroid) pushed towards 0 and 1, plus 10 % cell-wise noise, so the contrast is
1e-3..1. ``K_ff`` and ``f_f`` are assembled once per mesh.

Each variant builds ``pyamg.smoothed_aggregation_solver`` on ``K_ff`` with the rigid-body
modes (``model.near_nullspace``) and runs scipy's CG with one V-cycle as preconditioner to
the relative residual ``--rtol`` (default 1e-8); the residual is recomputed here. The
variants change one pyamg option against pyamg's defaults (strength of connection,
smoother, coarse size with a direct coarse solve, candidate improvement, aggregation), then
combine the best; ``fesens`` runs fesens's own CG with ``preconditioner="amg"`` (the
``AMG_*`` defaults of ``fesens/solvers/preconditioners.py``). Columns: setup, one solve, setup + 1
solve and setup + 3 solves (an optimization iteration reusing the hierarchy for the forward,
adjoint and one further solve; 3 x the measured solve), CG iterations. Each mesh runs in
its own child process (peak memory per mesh); BLAS/OpenMP on ``--threads`` threads.

Run ``python benchmarks/bench_amg.py [--quick]``; ``--help`` for the options.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    load_average,
    load_line,
    machine_lines,
    megabytes,
    peak_rss_mb,
    ratio,
    run_case,
    serve_case,
    set_child_threads,
    table,
    timed,
)
from _common import seconds as format_seconds

#: (cell type, Gmsh maximum cell size) of the full run: about 150k dofs each.
MESHES = (("tet4", 0.032), ("tet10", 0.07))
QUICK_MESHES = (("tet4", 0.1), ("tet10", 0.2))
SIMP_MIN = 1e-3
_THETA_001 = ("symmetric", {"theta": 0.01})
#: label -> keyword arguments of pyamg.smoothed_aggregation_solver (besides A, B).
VARIANTS: dict[str, dict[str, Any]] = {
    "pyamg defaults": {},
    "strength theta 0.01": {"strength": _THETA_001},
    "strength theta 0.02": {"strength": ("symmetric", {"theta": 0.02})},
    "strength theta 0.05": {"strength": ("symmetric", {"theta": 0.05})},
    "smoother jacobi x2": {"presmoother": ("jacobi", {"omega": 4.0 / 3.0, "iterations": 2}),
                           "postsmoother": ("jacobi", {"omega": 4.0 / 3.0, "iterations": 2})},
    "smoother gauss_seidel": {"presmoother": ("gauss_seidel", {"sweep": "symmetric"}),
                              "postsmoother": ("gauss_seidel", {"sweep": "symmetric"})},
    "max_coarse 500 splu": {"max_coarse": 500, "coarse_solver": "splu"},
    "max_coarse 2000 splu": {"max_coarse": 2000, "coarse_solver": "splu"},
    "improve_candidates None": {"improve_candidates": None},
    "aggregate naive": {"aggregate": "naive"},
    "coarse 500 + no improve": {"max_coarse": 500, "coarse_solver": "splu",
                                "improve_candidates": None},
    "theta 0.01 + coarse 500": {"strength": _THETA_001, "max_coarse": 500,
                                "coarse_solver": "splu"},
    "theta 0.01 + coarse 500 + no improve": {"strength": _THETA_001, "max_coarse": 500,
                                             "coarse_solver": "splu",
                                             "improve_candidates": None},
    "theta 0.01 + coarse 2000 + no improve": {"strength": _THETA_001, "max_coarse": 2000,
                                              "coarse_solver": "splu",
                                              "improve_candidates": None},
}
#: Variants run only when named with --variants: on the tet4 mesh of the first full run
#: (RESULTS.md) evolution took 9.7x and Chebyshev 4.2x the time of pyamg's defaults, and
#: evolution on the tet10 mesh grew past 12 GB.
EXTRA_VARIANTS: dict[str, dict[str, Any]] = {
    "strength evolution": {"strength": "evolution"},
    "smoother chebyshev 3": {"presmoother": ("chebyshev", {"degree": 3}),
                             "postsmoother": ("chebyshev", {"degree": 3})},
}
HEADERS = ["mesh", "dofs", "variant", "setup", "solve", "setup + 1 solve", "setup + 3 solves",
           "vs defaults (1 / 3 solves)", "iterations", "levels", "||f - K u|| / ||f||"]


def box_mesh(cell_type: str, size: float, folder: Path):
    """The Gmsh box with groups ``domain``, ``left`` (x = 0) and ``right`` (x = 2)."""
    import gmsh

    from fesens.mesh import read_mesh
    from fesens.mesh.gmsh_session import initialize_gmsh

    path = folder / f"box_{cell_type}.msh"
    initialize_gmsh(["-noenv"])
    try:
        gmsh.option.setNumber("General.Terminal", 0)
        gmsh.option.setNumber("Mesh.MeshSizeMax", size)
        gmsh.model.occ.addBox(0, 0, 0, 2, 1, 1)
        gmsh.model.occ.synchronize()
        gmsh.model.addPhysicalGroup(3, [1], name="domain")
        faces = {round(gmsh.model.occ.getCenterOfMass(2, s)[0], 6): s
                 for _, s in gmsh.model.getEntities(2)}
        gmsh.model.addPhysicalGroup(2, [faces[0.0]], name="left")
        gmsh.model.addPhysicalGroup(2, [faces[2.0]], name="right")
        gmsh.model.mesh.generate(3)
        gmsh.model.mesh.setOrder(2 if cell_type == "tet10" else 1)
        gmsh.write(str(path))
    finally:
        gmsh.finalize()
    return read_mesh(path)


def simp_stiffness(cell_type: str, size: float, seed: int = 16):
    """``K_ff``, ``f_f`` and the rigid-body modes of the SIMP-scaled box cantilever."""
    from fesens.physics import Elasticity

    with tempfile.TemporaryDirectory() as folder:
        mesh = box_mesh(cell_type, size, Path(folder))
    model = Elasticity(mesh)
    model.fix("left")
    model.traction("right", (0.0, 0.0, -1.0))
    centroids = mesh.points[mesh.cells[:, :4]].mean(axis=1)
    rng = np.random.default_rng(seed)
    field = sum(np.cos(centroids @ rng.normal(0.0, 6.0, 3) + rng.uniform(0, 2 * np.pi))
                for _ in range(6))
    rho = np.clip(0.5 + 0.6 * np.tanh(field) + 0.1 * rng.standard_normal(mesh.n_cells),
                  0.0, 1.0)
    scale = SIMP_MIN + (1.0 - SIMP_MIN) * rho**3
    K = model.assembler.stiffness([c * scale for c in model.coefficients()])
    f = model.load_vector()[model.assembler.free]
    return K, f, model.near_nullspace()


def run_variant(K, f, modes, options: dict[str, Any], rtol: float) -> dict[str, Any]:
    """Setup and one CG solve with the hierarchy of ``options``."""
    import pyamg
    from scipy.sparse.linalg import cg

    setup, hierarchy = timed(lambda: pyamg.smoothed_aggregation_solver(K, B=modes, **options))
    M = hierarchy.aspreconditioner(cycle="V")
    count = [0]

    def callback(_x):
        count[0] += 1

    solve, (u, _info) = timed(lambda: cg(K, f, rtol=rtol, atol=0.0, M=M, maxiter=2000,
                                         callback=callback))
    return {"setup": setup, "solve": solve, "iterations": count[0],
            "levels": len(hierarchy.levels),
            "residual": float(np.linalg.norm(f - K @ u) / np.linalg.norm(f))}


def run_fesens(K, f, modes, rtol: float) -> dict[str, Any]:
    """fesens's CG with ``preconditioner="amg"`` (the defaults of ``_amg``)."""
    from fesens.solvers import make_solver

    solver = make_solver("cg", preconditioner="amg", rtol=rtol, near_nullspace=modes)
    setup, _ = timed(lambda: solver.factorize(K))
    solve, u = timed(lambda: solver.solve(f))
    return {"setup": setup, "solve": solve, "iterations": solver.stats["last_iterations"],
            "levels": "-", "residual": float(np.linalg.norm(f - K @ u) / np.linalg.norm(f))}


def mesh_case(cell_type: str, size: float, rtol: float, labels: list[str]) -> dict[str, Any]:
    """Child process: every variant on one mesh."""
    K, f, modes = simp_stiffness(cell_type, size)
    # writable copies: fesens's cached patterns are frozen, and pyamg's evolution
    # strength of connection edits the matrix it is given in place
    K, modes = K.tocsr().copy(), np.array(modes)
    runs = {}
    for label in labels:
        if label == "fesens":
            runs[label] = run_fesens(K, f, modes, rtol)
        else:
            options = VARIANTS.get(label, EXTRA_VARIANTS.get(label))
            runs[label] = run_variant(K, f, modes, options, rtol)
        print(f"  {cell_type} {label}: {runs[label]['setup'] + runs[label]['solve']:.2f} s",
              file=sys.stderr, flush=True)
    return {"dofs": K.shape[0], "runs": runs, "peak_mb": peak_rss_mb()}


def rows_of(cell_type: str, result: dict[str, Any]) -> list[list[str]]:
    if "error" in result:
        return [[cell_type, "-", result["error"], *["-"] * (len(HEADERS) - 3)]]
    runs = result["runs"]
    base = runs.get("pyamg defaults")
    rows = []
    for label, run in runs.items():
        one, three = run["setup"] + run["solve"], run["setup"] + 3 * run["solve"]
        versus = "-" if base is None else (
            f"{ratio(one, base['setup'] + base['solve'])} / "
            f"{ratio(three, base['setup'] + 3 * base['solve'])}")
        rows.append([cell_type, str(result["dofs"]), label, format_seconds(run["setup"]),
                     format_seconds(run["solve"]), format_seconds(one), format_seconds(three),
                     versus, str(run["iterations"]), str(run["levels"]),
                     f"{run['residual']:.1e}"])
    return rows


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run on coarse meshes")
    parser.add_argument("--variants", nargs="+", choices=[*VARIANTS, *EXTRA_VARIANTS, "fesens"],
                        help="variants to run (default: all, then fesens)")
    parser.add_argument("--rtol", type=float, default=1e-8,
                        help="CG relative residual (default 1e-8)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS/OpenMP threads of the measured processes (0: library "
                             "defaults; default 1, steady on a shared machine)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds per mesh before its child process is killed")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.case:
        import json

        serve_case({"mesh": mesh_case}, json.loads(args.case))
        return 0
    if args.threads:
        set_child_threads(args.threads)
    labels = args.variants or [*VARIANTS, "fesens"]
    start = time.perf_counter()
    loads = [load_average()]
    rows, peaks = [], []
    for cell_type, size in QUICK_MESHES if args.quick else MESHES:
        result = run_case(__file__, "mesh", cell_type, size, args.rtol, labels,
                          timeout=args.timeout)
        rows += rows_of(cell_type, result)
        peaks.append(f"{cell_type} {megabytes(result.get('peak_mb'))} MiB")
    loads.append(load_average())
    print("\n".join([
        "# fesens AMG tuning benchmark: smoothed aggregation on unstructured 3D elasticity", "",
        *machine_lines(("numpy", "scipy", "pyamg", "gmsh")),
        load_line(loads), "",
        f"Gmsh box 2x1x1, SIMP densities (contrast {SIMP_MIN:g}..1), rigid-body modes; CG to "
        f"rtol {args.rtol:g}; one run per variant; 'setup + 3 solves' = setup + 3 x solve.",
        "", table(HEADERS, rows), "",
        f"peak memory per mesh process: {', '.join(peaks)}",
        f"total benchmark wall time: {time.perf_counter() - start:.0f} s",
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
