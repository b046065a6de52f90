"""J2 plasticity over a load history side by side: fesens, torch-fem and jax-fem on one problem.

Every code solves the block of ``benchmarks/peers/plastic_block.py``: JAX-FEM's plasticity
demo (a 10 mm hex8 cube, ``E = 70 GPa``, ``ν = 0.3``, ``σ_y = 250 MPa``) with the linear
isotropic hardening of torch-fem's J2 example (``k = E / 10``), its bottom clamped, its top
face moved along z by ``t_n · 0.1 mm`` for ``t = 0, 0.2, …, 1, 0.8, …, −1`` (loading, unloading,
reverse yielding: 15 increments), Newton per increment to ``‖R‖ < 1e-8 N`` on the free dofs,
direct linear solves. Each code differentiates the top face's last reaction ``F`` with
respect to a per-cell factor ``θ`` of Young's modulus at ``θ = 1``, through the whole history
(each in its own way: fesens's one reverse sweep over the increments, torch-fem's adjoint per
increment chained by autograd, jax-fem's ``ad_wrapper`` adjoint per increment chained by
``jax.grad``). Each (code, size) case is a fresh process (the peers in their own environment,
``make peers``; interpreter ``$FESENS_PEERS_PYTHON``, else ``.peers/bin/python``), measured
by ``peers/plastic_harness.py``: set-up, a cold forward and gradient (JAX compiles then),
``--repeats`` warm ones (medians), the peak resident memory of each above what was resident
before it and the process's whole peak (``ru_maxrss``), and with ``--check`` a central
difference of its own forward along a random direction.

    python benchmarks/bench_plasticity_peers.py [--sizes 8x8x8 12x12x12] [--codes ...]

fesens runs as ``fesens`` (its default tangent backend, ``auto``) and ``fesens-lu`` (every
tangent by LU, SuperLU: the factorization the peers use); the case checks that fesens's
``box`` numbers nodes and cells like ``plastic_block.py`` and constrains the same dofs. The
tables: times and memory; the agreement of the reaction histories, the last reaction and the
gradient with the first code that ran at that size; fesens's times and memory over each
peer's (< 1: fesens is faster or smaller; > 1 is a loss, and printed as one). torch-fem cuts
the increment where the history turns back into substeps (see ``peers/torchfem_plasticity.py``),
so its reactions differ from the others' by more than round-off: the agreement table also runs
fesens (untimed, here) on the load factors torch-fem converged at and compares the two. A case
of :data:`SKIPPED` is not run unless ``--run-all`` is given. ``--json PATH`` also writes every
case's result; ``--record`` appends the report to ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from _common import (
    case_progress,
    comparison_tables,
    load_line,
    machine_lines,
    measure_fesens,
    megabytes,
    peer_arguments,
    peers_python,
    ratio,
    record,
    relative_difference,
    run_peer_cases,
    seconds,
    serve_case,
    set_peer_threads,
    table,
    write_results,
)

SIZES = ("8x8x8", "12x12x12")
PEERS = Path(__file__).resolve().parent / "peers"
#: The peer codes: their case script (run by the peers' interpreter).
PEER_SCRIPTS = {"torch-fem": PEERS / "torchfem_plasticity.py",
                "jax-fem": PEERS / "jaxfem_plasticity.py"}
#: Cases left out unless ``--run-all``, with the reason their row prints.
SKIPPED = {("jax-fem", "12x12x12"): "skipped (--run-all runs it): the slowest case (at "
                                    "8x8x8 its first value+grad took 37 s on 2 cores), run "
                                    "on its own"}


class FesensBlock:
    """fesens's model of the block: ``Elastoplasticity`` on ``box`` (checked to have the
    problem's nodes, cells and constrained dofs), its history an ``IncrementalAnalysis``.

    Parameters
    ----------
    problem : plastic_block.PlasticBlock
    solver : str
        Backend of the tangent: ``"auto"`` (fesens's default) or ``"lu"``.
    factors : numpy.ndarray, optional
        The load factors of the history, ``plastic_block.FACTORS`` by default.
    """

    def __init__(self, problem, solver: str, factors: np.ndarray | None = None):
        from plastic_block import (
            AMPLITUDE,
            ATOL,
            FACTORS,
            HARDENING,
            LENGTH,
            POISSON,
            YIELD_STRESS,
            YOUNG,
        )

        from fesens.fem.analysis.incremental import IncrementalAnalysis
        from fesens.mesh import box
        from fesens.physics.elastoplasticity import Elastoplasticity

        mesh = box(problem.nx, problem.ny, problem.nz, LENGTH, LENGTH, LENGTH,
                   cell_type="hex8")
        points = problem.points()
        # the gradient is compared per cell: the codes must number cells and nodes alike
        if not (np.array_equal(mesh.cells, problem.cells())
                and np.allclose(mesh.points, points, rtol=0.0, atol=1e-12)):
            raise ValueError("fesens's box numbers its nodes or cells unlike plastic_block.py")
        self.model = Elastoplasticity(mesh, E=YOUNG, nu=POISSON, yield_stress=YIELD_STRESS,
                                      isotropic_modulus=HARDENING)
        self.model.fix("back")  # z = 0
        self.model.fix("front", components="z", value=AMPLITUDE)  # z = L
        if not np.array_equal(self.model.constrained_dofs, problem.constrained_dofs(points)):
            raise ValueError("fesens constrains other dofs than plastic_block.py")
        self.top = problem.top_z_dofs(points)
        self.young = YOUNG
        # The peers stop an increment at ‖R‖ < ATOL on the free dofs: fesens's atol with
        # rtol = 0 is that test; stol = 0: no step-size test, which the peers lack; no line
        # search: full Newton steps, as the peers take them.
        newton = {"rtol": 0.0, "atol": ATOL, "stol": 0.0, "line_search": None}
        self.history = IncrementalAnalysis(self.model, FACTORS if factors is None else factors,
                                           newton=newton, solver=solver)

    def reaction(self, state, t):
        """The top face's reaction ``F_n`` of one increment's state."""
        from fesens.ad import numpy_wrapper as anp

        return anp.sum(state.reactions[self.top])

    def forward(self, theta: np.ndarray) -> np.ndarray:
        """The plain run: every increment's state kept, nothing recorded for a gradient."""
        solution = self.history.solve(E=self.young * theta)
        return solution.reactions[:, self.top].sum(axis=1)

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        from fesens.ad import value_and_grad

        value, gradient = value_and_grad(
            lambda th: self.history.values(self.reaction, E=self.young * th)[-1])(theta)
        return float(value), np.asarray(gradient)


def fesens_case(size: str, repeats: int, check: bool, solver: str = "auto") -> dict[str, Any]:
    """fesens's case, run in its own process like the peers' (see the module docstring),
    measured by ``peers/plastic_harness.py``'s :func:`measure`; adds ``stats`` (Newton
    iterations and factorizations of the last run) and the tangent backend."""
    sys.path.insert(0, str(PEERS))
    from plastic_harness import measure

    result, block = measure_fesens(measure, FesensBlock, solver, size, repeats, check)
    block.forward(np.ones(block.model.mesh.n_cells))
    result["stats"] = {key: int(value) for key, value in block.history.stats.items()}
    result["backend"] = type(block.model.tangent_solver(solver)).__name__
    return result


CASES = {"fesens": fesens_case, "fesens-lu": functools.partial(fesens_case, solver="lu")}
CODES = (*CASES, *PEER_SCRIPTS)


def history_difference(a: Sequence[float], b: Sequence[float]) -> float:
    """``max_n |F_n − G_n| / max_n |G_n|`` of two reaction histories."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def on_torchfem_substeps(size: str, result: dict[str, Any]) -> float | None:
    """fesens's reaction history on the load factors torch-fem converged at (its cut-back
    substeps included, ``factors_run``), against torch-fem's reactions: ``max_n |ΔF_n| /
    max |F_n|`` at the requested increments, or None without a record. Run here, untimed."""
    if "factors_run" not in result:
        return None
    if str(PEERS) not in sys.path:
        sys.path.insert(0, str(PEERS))
    from plastic_block import FACTORS, PlasticBlock

    factors = np.asarray(result["factors_run"], dtype=float)
    # The ends of the requested increments, in order (the factors repeat across the history).
    ends, start = [0], 1
    for target in FACTORS[1:]:
        end = start + int(np.flatnonzero(np.isclose(factors[start:], target, rtol=0.0,
                                                    atol=1e-9))[0])
        factors[end] = target
        ends.append(end)
        start = end + 1
    problem = PlasticBlock.parse(size)
    reactions = FesensBlock(problem, "auto", factors).forward(np.ones(problem.n_cells))
    return history_difference(reactions[ends], result["reactions"])


def progress(result: dict[str, Any]) -> str:
    """One line on a finished case."""
    return case_progress(result, "reaction", "F")


def report(results: dict[tuple[str, str], dict[str, Any]], sizes: Sequence[str],
           codes: Sequence[str]) -> str:
    """The times-and-memory table, the agreement table and the ratio table."""

    def timing(code: str, r: dict[str, Any]) -> list[str]:
        stats = r.get("stats")
        return [seconds(r["gradient_cold_s"]), seconds(r["forward_s"]), seconds(r["gradient_s"]),
                ratio(r["gradient_s"], r["forward_s"]), megabytes(r["process_peak_mb"]),
                megabytes(r["forward_peak_mb"]), megabytes(r["gradient_peak_mb"]),
                f"{stats['newton_iterations']} / {stats['factorizations']}, {r['backend']}"
                if stats else "-"]

    def agreement(code: str, r: dict[str, Any], reference: dict[str, Any]) -> list[str]:
        differences = ["ref.", "ref.", "ref."] if reference is r else [
            f"{history_difference(r['reactions'], reference['reactions']):.1e}",
            f"{relative_difference(r['reaction'], reference['reaction']):.1e}",
            f"{relative_difference(r['gradient'], reference['gradient']):.1e}"]
        same_substeps = (on_torchfem_substeps(r["size"], r) if code == "torch-fem"
                         else None)
        return [f"{r['reaction']:.10e}", *differences,
                "-" if same_substeps is None else f"{same_substeps:.1e}"]

    timing_table, agreement_table = comparison_tables(
        results, sizes, codes, "reaction",
        (["1st value+grad", "forward", "value+grad", "value+grad / forward", "peak MB",
          "forward +MB", "value+grad +MB", "Newton its / factorizations, backend"], timing),
        (["last reaction F (N)", "F_n history diff", "F rel. diff", "dF/dθ rel. diff",
          "F_n diff, fesens on its substeps"], agreement))
    return (f"## Times and memory\n\n{timing_table}\n\n## Agreement\n\n{agreement_table}\n\n"
            f"## fesens over the peers\n\n{ratio_table(results, sizes, codes)}\n")


def ratio_table(results: dict[tuple[str, str], dict[str, Any]], sizes: Sequence[str],
                codes: Sequence[str]) -> str:
    """Each fesens row's warm times and memory over each peer's at the same size (< 1:
    fesens is faster or smaller; a ratio > 1 is marked a loss)."""

    def cell(ours: float, theirs: float) -> str:
        value = ours / theirs if theirs else float("nan")
        return f"{value:.3g}" + (" (loss)" if value > 1.0 else "")

    rows = []
    for size in sizes:
        for ours in (c for c in codes if c in CASES and "reaction" in results[c, size]):
            mine = results[ours, size]
            for peer in (c for c in codes if c in PEER_SCRIPTS):
                theirs = results[peer, size]
                if "reaction" not in theirs:
                    continue
                rows.append([size, f"{ours} / {peer}",
                             cell(mine["forward_s"], theirs["forward_s"]),
                             cell(mine["gradient_s"], theirs["gradient_s"]),
                             cell(mine["process_peak_mb"], theirs["process_peak_mb"]),
                             cell(max(mine["gradient_peak_mb"], 1.0),
                                  max(theirs["gradient_peak_mb"], 1.0))])
    return table(["size", "ratio", "forward", "value+grad", "peak MB", "value+grad +MB"], rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = peer_arguments(__doc__, SIZES, CODES, "jax-fem at 12x12x12")
    parser.add_argument("--record", action="store_true",
                        help="append the report to benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    if args.case:
        serve_case(CASES, json.loads(args.case))
        return 0

    set_peer_threads(args.threads)
    results, loads = run_peer_cases(__file__, args, PEER_SCRIPTS, SKIPPED, progress)
    command = " ".join(["python benchmarks/bench_plasticity_peers.py",
                        *(argv if argv is not None else sys.argv[1:])])
    header = "\n".join(["# J2 plasticity over a load history: fesens, torch-fem, jax-fem", "",
                        f"`{command.replace(' --record', '')}`", "",
                        *machine_lines(["numpy", "scipy", "scikit-sparse"]),
                        f"peers' interpreter: {peers_python()}", load_line(loads), ""])
    record(header + "\n" + report(results, args.sizes, args.codes), args.record)
    write_results(args.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
