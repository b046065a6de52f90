"""Time-dependent adjoints: the gradient of a transient run against its forward run, with
every state stored and with binomial checkpointing, and the same run written in JAX.

Linear transient heat conduction ``M Ṫ + K T = f`` (``fesens.fem.transient.TransientProblem``,
backward Euler, constant step: one matrix ``M/Δt + K``, one CHOLMOD factorization shared
by the forward and the adjoint sweep) on a unit-height grid of quad4 (2D) or hex8 (3D)
cells: ``T = 0`` on ``left``, a unit heat source, ``T_0 = 0``, ``N`` steps of
``Δt = 1e-4`` (``N = 1000``: ``t_end = 0.1``, a tenth of the diffusion time over the
height). The objective is the trapezoidal ``J(κ) = ∫ Σ_i T_i² dt`` and the differentiated
input the per-cell conductivity ``κ`` (new values, ``1 + 0.2 sin(...)`` shifted per call,
for every timed call, as in an optimization loop). Per case (each its own process):

* **forward**: ``J(κ)`` untraced (one numeric factorization, ``N`` substitutions);
* **gradient**: ``value_and_grad(J)(κ)``: the forward sweep keeping the states, the
  adjoint sweep with the same factorization (``N`` transposed substitutions);
* **checkpointing** (``max_states = ceil(√N)``): the same gradient keeping only that many
  states; the others are recomputed from them on Griewank's binomial schedule (``stats``:
  ``advanced``, steps advanced again; ``taped``, steps re-run just before their adjoint:
  the last only, the others read the state after their step from the step reversed
  before). Its cost beyond the forward run, (gradient − forward) / forward, is the
  recomputation and the backward sweep; its floor is the steps the schedule runs beyond the
  forward run's, ``(advanced + taped) / N``, plus the backward sweep (backward / forward of
  the all-states row): a target below it is out of reach for this schedule and budget;
* **peak memory** of a forward and of a gradient call, measured two ways: the growth of
  the resident set (``ru_maxrss`` after ``malloc_trim`` and a reset of the high-water mark,
  which includes the CHOLMOD factor and any library buffers) and the tracemalloc peak (the
  numpy arrays Python allocates: the stored states, the adjoint's accumulators; not the
  CHOLMOD factor, which C code allocates). Next to them: the bytes of the states kept and
  an estimate of the factor, ``nnz(L)`` × 12 bytes (value and row index).

A structural-dynamics row (``DynamicProblem``, Newmark average acceleration) does the same
for a 2D cantilever (clamped ``left``, unit downward traction on ``right``, ``E`` per cell,
``J = ∫ u_tip² dt``).

**JAX** rows: the same heat problem as a JAX user writes it: the matrices as
``jax.experimental.sparse.BCOO`` (``K`` assembled from the per-cell conductivity and the
unit cell matrix, ``M`` constant), every step a Jacobi-preconditioned
``jax.scipy.sparse.linalg.cg`` (relative tolerance 1e-10, warm-started from the last state;
differentiated implicitly by ``custom_linear_solve``), ``jax.lax.scan`` over the steps,
``jax.jit`` of ``J`` and of ``jax.value_and_grad(J)``. Its checkpointed variant is the
usual nested scan: an outer scan over ``B`` blocks of ``L`` steps (``B·L = N``,
``B ≈ √N``) whose body is ``jax.checkpoint`` of the inner scan, so it keeps ``B`` block
states and, while reversing a block, that block's ``L`` states. A sparse direct solve is
not offered by JAX on the CPU (``jax.experimental.sparse.linalg.spsolve`` calls
``scipy.sparse.linalg.spsolve``, a new LU factorization every step), and a dense Cholesky
of the 2D problem's 20 301 unknowns would hold a 3.3 GB factor and read it twice every
step. JAX's compile time (first call) is printed apart and is not in its times. The
fesens and JAX gradients are compared (relative difference of their dot products with a
fixed random direction; the CG tolerance bounds it). The JAX rows run ``--jax-steps``
steps (default 100, same ``Δt``: at 200x100 a JAX step and its adjoint cost tens of
milliseconds, so a row of 1000 steps takes several minutes on a shared 2-core machine),
next to fesens rows of the same ``N``.

Times are minima over ``--repeats`` calls after a warm-up, wall-clock and the CPU time of
the case's process (on a shared machine the other processes inflate the wall-clock, far
less the CPU time); ratios are taken from numbers measured in the same process. BLAS runs
on ``--threads`` threads (default 1); JAX (XLA's CPU thread pool) keeps its defaults.

Usage::

    .venv/bin/python benchmarks/bench_transient.py                      # ~30 min on 2 cores
    .venv/bin/python benchmarks/bench_transient.py --quick              # small grids, N = 50
    .venv/bin/python benchmarks/bench_transient.py --sizes 200x100 --steps 1000 --no-jax
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from _common import (
    GridSize,
    cantilever_model,
    load_average,
    load_line,
    machine_lines,
    peak_rss_mb,
    ratio,
    release_free_memory,
    reset_peak_rss,
    resident_mb,
    run_case,
    seconds,
    serve_case,
    set_child_threads,
    table,
    unit_element_matrix,
)

DEFAULT_SIZES = ("200x100", "32x16x16")
DEFAULT_DYNAMIC = "100x50"
DT = 1e-4                        # heat: 1000 steps are a tenth of the diffusion time
DYNAMIC_T_END = 50.0             # about two periods of the cantilever's first mode
CG_RTOL = 1e-10


# --------------------------------------------------------------------------- problems
def heat_model(size: GridSize):
    """Heat conduction on the grid of ``size`` (unit height, square cells): ``T = 0`` on
    ``left``, a unit heat source ``q``."""
    from fesens.mesh import box, rectangle
    from fesens.physics import HeatConduction

    nx, ny = size.cells[:2]
    lengths = (nx / ny, 1.0, *(n / ny for n in size.cells[2:]))
    mesh = (rectangle(nx, ny, *lengths, cell_type="quad4") if size.dim == 2
            else box(*size.cells, *lengths, cell_type="hex8"))
    model = HeatConduction(mesh)
    model.fix("left")
    model.heat_source(1.0, name="q")
    return model


def design(n_cells: int, call: int) -> np.ndarray:
    """The per-cell input of the ``call``-th evaluation ``(n_cells,)``: a smooth field in
    [0.8, 1.2], shifted for every call (so every call re-factorizes)."""
    phase = np.arange(n_cells) * (2 * np.pi / max(n_cells, 1))
    return 1.0 + 0.2 * np.sin(3 * phase + 0.37 * call)


def trapezoid(values, dt: float):
    """``∫ j dt`` over uniform levels by the trapezoidal rule (traced numpy)."""
    return dt * (np.sum(values) - 0.5 * (values[0] + values[-1]))


def squares(T, t):
    return np.sum(T ** 2)


def direction(n: int) -> np.ndarray:
    """A fixed random direction ``(n,)`` to compare gradients of two codes."""
    return np.random.default_rng(11).standard_normal(n)


def factor_bytes(matrix) -> float:
    """``nnz(L)`` × 12 bytes of the Cholesky factor of ``matrix`` (CHOLMOD's ordering)."""
    from sksparse.cholmod import cholesky

    return float(cholesky(matrix.tocsc()).L().nnz * 12)


# --------------------------------------------------------------------------- measuring
def measure(forward: Callable[[np.ndarray], Any], gradient: Callable[[np.ndarray], Any],
            inputs: Callable[[int], np.ndarray], repeats: int,
            trace_python: bool = True) -> dict[str, Any]:
    """Minimum times of ``forward`` and ``gradient`` over ``repeats`` alternating calls (new
    inputs each) after a warm-up, wall-clock and the CPU time of this process (which the
    other processes of a shared machine inflate far less), and the peak memory of one call
    of each."""
    forward(inputs(0))
    gradient(inputs(0))
    t_forward, t_gradient, cpu_forward, cpu_gradient = [], [], [], []
    for r in range(repeats):
        for fn, times, cpu, call in ((forward, t_forward, cpu_forward, 2 * r + 1),
                                     (gradient, t_gradient, cpu_gradient, 2 * r + 2)):
            x = inputs(call)
            start, start_cpu = time.perf_counter(), time.process_time()
            fn(x)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    result = {"forward": min(t_forward), "gradient": min(t_gradient),
              "forward_cpu": min(cpu_forward), "gradient_cpu": min(cpu_gradient),
              "forward_all": t_forward, "gradient_all": t_gradient,
              "forward_cpu_all": cpu_forward, "gradient_cpu_all": cpu_gradient}
    for name, fn in (("forward", forward), ("gradient", gradient)):
        x = inputs(100)
        release_free_memory()
        base = resident_mb()
        reset_peak_rss()
        fn(x)
        result[f"rss_{name}"] = peak_rss_mb() - base
        if trace_python:
            release_free_memory()
            tracemalloc.start()
            fn(x)
            result[f"py_{name}"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    return result


# --------------------------------------------------------------------------- cases
def case_heat(label: str, n_steps: int, checkpointed: bool, repeats: int) -> dict[str, Any]:
    """fesens: transient heat, all states stored or ``ceil(√N)`` checkpoints."""
    from fesens.ad import value_and_grad
    from fesens.fem.transient import TransientProblem

    size = GridSize.parse(label)
    model = heat_model(size)
    budget = math.ceil(math.sqrt(n_steps)) if checkpointed else None
    dt = DT
    problem = TransientProblem(model, t_end=n_steps * dt, dt=dt, scheme="backward_euler",
                               max_states=budget, solver="cholmod")

    def J(kappa):
        return trapezoid(problem.values(squares, conductivity=kappa), dt)

    gradient = value_and_grad(J)
    result = measure(J, gradient, lambda i: design(model.mesh.n_cells, i), repeats)
    value, g = gradient(design(model.mesh.n_cells, 0))
    n_free = model.free_dofs.size
    step_matrix = (model.mass(1.0).tocsr() / dt + model.stiffness("ff").tocsr())
    result.update(
        cells=model.mesh.n_cells, unknowns=int(n_free), steps=n_steps, budget=budget,
        stats={k: v for k, v in problem.stats.items() if k != "factorizations"},
        factorizations=problem.stats["factorizations"],
        states_mb=problem.stats["kept"] * n_free * 8 / 2**20,
        factor_mb=factor_bytes(step_matrix) / 2**20, J=float(value),
        g_dot=float(np.dot(g, direction(g.size))))
    return result


def case_heat_jax(label: str, n_steps: int, checkpointed: bool, repeats: int
                  ) -> dict[str, Any]:
    """JAX: the same run, BCOO matrices, CG per step, ``lax.scan`` (nested and
    ``jax.checkpoint``-ed when checkpointed)."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import sparse as jsparse
    from jax.scipy.sparse.linalg import cg

    jax.config.update("jax_enable_x64", True)
    size = GridSize.parse(label)
    model = heat_model(size)
    dt = DT
    free = model.free_dofs
    n = free.size
    # the assembly a JAX user writes: per-cell matrices scattered by the cell dofs, the
    # rows and columns of prescribed dofs dropped (T = 0 there)
    index = -np.ones(model.dofmap.n_dofs, dtype=np.int64)
    index[free] = np.arange(n)
    local = index[model.dofmap.cell_dofs]
    rows = np.broadcast_to(local[:, :, None], (*local.shape, local.shape[1]))
    cols = np.broadcast_to(local[:, None, :], rows.shape)
    keep = (rows >= 0) & (cols >= 0)
    cell, a, b = np.nonzero(keep)
    Ke = unit_element_matrix(model)
    pairs = jnp.asarray(np.stack([rows[keep], cols[keep]], axis=1))
    Ke_entries, cells = jnp.asarray(Ke[a, b]), jnp.asarray(cell)
    M = jsparse.BCOO.from_scipy_sparse(model.mass(1.0).tocsr())
    F = jnp.asarray(model.load_vector()[free])

    def solve_run(kappa):
        K = jsparse.BCOO((kappa[cells] * Ke_entries, pairs), shape=(n, n))
        inverse_diagonal = 1.0 / (_diagonal(M, n) / dt + _diagonal(K, n))

        def step(T, _):
            rhs = (M @ T) / dt + F
            T_new, _ = cg(lambda x: (M @ x) / dt + K @ x, rhs, x0=T, tol=CG_RTOL,
                          M=lambda x: inverse_diagonal * x)
            return T_new, jnp.sum(T_new ** 2)

        T0 = jnp.zeros(n)
        if not checkpointed:
            _, values = jax.lax.scan(step, T0, None, length=n_steps)
        else:
            blocks = _block_count(n_steps)

            @jax.checkpoint
            def block(T, _):
                return jax.lax.scan(step, T, None, length=n_steps // blocks)

            _, values = jax.lax.scan(block, T0, None, length=blocks)
            values = values.reshape(-1)
        return dt * (jnp.sum(values) - 0.5 * values[-1])  # j(T_0) = 0

    forward = jax.jit(solve_run)
    gradient = jax.jit(jax.value_and_grad(solve_run))
    start = time.perf_counter()
    forward(jnp.asarray(design(model.mesh.n_cells, 0))).block_until_ready()
    compile_forward = time.perf_counter() - start
    start = time.perf_counter()
    jax.block_until_ready(gradient(jnp.asarray(design(model.mesh.n_cells, 0))))
    compile_gradient = time.perf_counter() - start

    def run(fn):
        return lambda x: jax.block_until_ready(fn(jnp.asarray(x)))

    result = measure(run(forward), run(gradient), lambda i: design(model.mesh.n_cells, i),
                     repeats, trace_python=False)
    value, g = gradient(jnp.asarray(design(model.mesh.n_cells, 0)))
    g = np.asarray(g)
    result.update(cells=model.mesh.n_cells, unknowns=int(n), steps=n_steps,
                  budget=_block_count(n_steps) if checkpointed else None,
                  first_forward=compile_forward, first_gradient=compile_gradient,
                  J=float(value), g_dot=float(np.dot(g, direction(g.size))),
                  jax=jax.__version__)
    return result


def _diagonal(A, n: int):
    """The diagonal of a BCOO matrix ``(n,)`` (duplicates summed)."""
    import jax.numpy as jnp

    rows, cols = A.indices[:, 0], A.indices[:, 1]
    return jnp.zeros(n).at[rows].add(jnp.where(rows == cols, A.data, 0.0))


def _block_count(n_steps: int) -> int:
    """The divisor of ``n_steps`` nearest ``√n_steps`` (the outer scan's length)."""
    divisors = [d for d in range(1, n_steps + 1) if n_steps % d == 0]
    return min(divisors, key=lambda d: abs(d - math.sqrt(n_steps)))


def case_dynamic(label: str, n_steps: int, checkpointed: bool, repeats: int
                 ) -> dict[str, Any]:
    """fesens: Newmark (average acceleration) on the 2D cantilever, ``E`` per cell."""
    from fesens.ad import value_and_grad
    from fesens.fem.transient import DynamicProblem

    size = GridSize.parse(label)
    model = cantilever_model(size)
    budget = math.ceil(math.sqrt(n_steps)) if checkpointed else None
    dt = DYNAMIC_T_END / n_steps
    problem = DynamicProblem(model, t_end=DYNAMIC_T_END, dt=dt, scheme="newmark",
                             max_states=budget, solver="cholmod")
    nx, ny = size.cells[:2]
    tip = 2 * int(np.argmin(np.hypot(model.mesh.points[:, 0] - nx / ny,
                                     model.mesh.points[:, 1]))) + 1

    def tip_squared(u, t):
        return u[tip] ** 2

    def J(E):
        return trapezoid(problem.values(tip_squared, E=E), dt)

    gradient = value_and_grad(J)
    result = measure(J, gradient, lambda i: design(model.mesh.n_cells, i), repeats)
    value, _ = gradient(design(model.mesh.n_cells, 0))
    n_free = model.free_dofs.size
    result.update(
        cells=model.mesh.n_cells, unknowns=int(n_free), steps=n_steps, budget=budget,
        stats={k: v for k, v in problem.stats.items() if k != "factorizations"},
        factorizations=problem.stats["factorizations"],
        states_mb=problem.stats["kept"] * 3 * n_free * 8 / 2**20, J=float(value))
    return result


CASES = {"heat": case_heat, "heat_jax": case_heat_jax, "dynamic": case_dynamic}


# --------------------------------------------------------------------------- report
CLOCKS = (("wall", ""), ("CPU", "_cpu"))  # label, key suffix of measure's times


def backward_ratio(r: dict[str, Any], suffix: str = "") -> float:
    """(gradient − forward) / forward of a row, by the clock of ``suffix``: the backward
    sweep (all states stored), or the recomputation and the backward sweep (checkpointed),
    against the forward run."""
    forward = r["forward" + suffix]
    return (r["gradient" + suffix] - forward) / forward


def report_rows(results: list[tuple[str, str, str, dict[str, Any]]]) -> str:
    headers = ["problem", "code", "states kept", "unknowns", "N", "forward", "gradient",
               "gradient / forward", "backward / forward", "CPU s fwd / grad",
               "CPU gradient / forward", "CPU backward / forward", "recomputed steps",
               "RSS MB fwd / grad", "tracemalloc MB fwd / grad", "states MB", "factor MB",
               "compile s fwd / grad"]
    rows = []
    for problem, code, kept, r in results:
        if "error" in r:
            rows.append([problem, code, kept, r["error"], *["-"] * (len(headers) - 4)])
            continue
        stats = r.get("stats", {})
        py = (f"{r['py_forward']:.0f} / {r['py_gradient']:.0f}" if "py_forward" in r
              else "-")
        compiled = (f"{r['first_forward']:.1f} / {r['first_gradient']:.1f}"
                    if "first_forward" in r else "-")
        cpu = "forward_cpu" in r
        rows.append([
            problem, code, kept, str(r["unknowns"]), str(r["steps"]), seconds(r["forward"]),
            seconds(r["gradient"]), ratio(r["gradient"], r["forward"]),
            f"{backward_ratio(r):.3g}",
            f"{r['forward_cpu']:.3g} / {r['gradient_cpu']:.3g}" if cpu else "-",
            ratio(r["gradient_cpu"], r["forward_cpu"]) if cpu else "-",
            f"{backward_ratio(r, '_cpu'):.3g}" if cpu else "-",
            str(stats.get("advanced", "-")) if stats else "-",
            f"{r['rss_forward']:.0f} / {r['rss_gradient']:.0f}", py,
            f"{r['states_mb']:.1f}" if "states_mb" in r else "-",
            f"{r['factor_mb']:.1f}" if "factor_mb" in r else "-", compiled])
    return table(headers, rows)


def schedule_floor(checkpointed: dict[str, Any], stored: dict[str, Any] | None,
                   suffix: str = "") -> float | None:
    """The least (gradient − forward) / forward of a checkpointed row: the steps its
    schedule runs beyond the forward run's, ``(advanced + taped) / N`` (Griewank's
    ``t(N, s)`` less the ``spine[-1]`` advances the forward sweep makes anyway, see
    ``minimal_advances``), plus the backward sweep as the row of the same problem and
    ``N`` with all states stored measured it (its backward / forward, by the clock of
    ``suffix``); None without that row."""
    if stored is None:
        return None
    n, stats = checkpointed["steps"], checkpointed["stats"]
    return (stats["advanced"] + stats["taped"]) / n + backward_ratio(stored, suffix)


def target_lines(results) -> list[str]:
    """PASS/MISS of the targets, read as the cost of the gradient beyond the forward run it
    follows, by wall-clock and by CPU time: all states stored, backward / forward <= 1.3;
    checkpointed, (recomputation + backward) / forward <= 2.5 (with the schedule's floor,
    :func:`schedule_floor`) and peak memory <= kept states + factor; fesens ahead of JAX
    in time and memory at the same N."""
    lines = []

    def mark(ok: bool) -> str:
        return "PASS" if ok else "MISS"

    stored_rows = {(p, r["steps"]): r for p, c, _, r in results
                   if c == "fesens" and "error" not in r and r["budget"] is None}
    for problem, code, kept, r in results:
        if code != "fesens" or "error" in r:
            continue
        for clock, suffix in CLOCKS:
            if "forward" + suffix not in r:
                continue
            b = backward_ratio(r, suffix)
            q = r["gradient" + suffix] / r["forward" + suffix]
            if r["budget"] is None:
                lines.append(f"[{mark(b <= 1.3)}] {problem}, N = {r['steps']}, all states, "
                             f"{clock}: backward / forward = {b:.2f} <= 1.3 (gradient / "
                             f"forward {q:.2f})")
                continue
            floor = schedule_floor(r, stored_rows.get((problem, r["steps"])), suffix)
            below = ("" if floor is None else
                     f" (schedule's floor {floor:.2f}: (advanced {r['stats']['advanced']} + "
                     f"taped {r['stats']['taped']}) / N + backward / forward of all states"
                     + (", above the target)" if floor > 2.5 else ")"))
            lines.append(f"[{mark(b <= 2.5)}] {problem}, N = {r['steps']}, {kept}, {clock}: "
                         f"(recomputation + backward) / forward = {b:.2f} <= 2.5 (gradient "
                         f"/ forward {q:.2f}){below}")
        if r["budget"] is not None and "factor_mb" in r:
            bound = r["states_mb"] + r["factor_mb"]
            lines.append(f"[{mark(r['rss_gradient'] <= bound)}] {problem}, N = "
                         f"{r['steps']}, {kept}: gradient RSS growth {r['rss_gradient']:.1f} MB"
                         f" (tracemalloc {r['py_gradient']:.1f} MB) <= states "
                         f"{r['states_mb']:.1f} + factor {r['factor_mb']:.1f} MB")
    fesens_rows = {(p, r["steps"], r["budget"] is None): r for p, c, _, r in results
                   if c == "fesens" and "error" not in r}
    for problem, code, kept, r in results:
        ours = fesens_rows.get((problem, r.get("steps"), r.get("budget") is None))
        if code != "JAX" or "error" in r or ours is None:
            continue
        lines.append(f"[{mark(ours['gradient'] < r['gradient'])}] {problem}, N = "
                     f"{r['steps']}, {kept}: fesens gradient {seconds(ours['gradient'])} < "
                     f"JAX {seconds(r['gradient'])}")
        lines.append(f"[{mark(ours['rss_gradient'] < r['rss_gradient'])}] {problem}, N = "
                     f"{r['steps']}, {kept}: fesens gradient RSS growth "
                     f"{ours['rss_gradient']:.0f} MB < JAX {r['rss_gradient']:.0f} MB")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", default=list(DEFAULT_SIZES))
    parser.add_argument("--steps", type=int, nargs="+", default=[1000],
                        help="N per size (one value: every size)")
    parser.add_argument("--dynamic", default=DEFAULT_DYNAMIC,
                        help="grid of the Newmark row ('none': skip it)")
    parser.add_argument("--dynamic-steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--jax-steps", type=int, default=100,
                        help="N of the JAX rows (and of fesens rows beside them)")
    parser.add_argument("--no-jax", action="store_true")
    parser.add_argument("--quick", action="store_true", help="80x40 and 16x8x8, N = 50")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        serve_case(CASES, json.loads(args.case))
        return 0
    if args.quick:
        args.sizes, args.steps, args.dynamic = ["80x40", "16x8x8"], [50], "80x40"
        args.dynamic_steps, args.jax_steps, args.repeats = 50, 50, 2
    steps = args.steps * len(args.sizes) if len(args.steps) == 1 else args.steps
    set_child_threads(args.threads)
    start, loads = time.perf_counter(), [load_average()]
    print("# fesens transient-adjoint benchmark\n")
    # numba: whether the adjoint's matrix cotangents ran the compiled pass (the jit extra)
    print("\n".join(machine_lines(("numpy", "scipy", "scikit-sparse", "numba", "jax"))))
    plan = []
    for label, n in zip(args.sizes, steps, strict=True):
        dim = GridSize.parse(label).dim
        name = f"heat {label} ({'quad4' if dim == 2 else 'hex8'})"
        lengths = [n] if args.no_jax or args.jax_steps == n else [n, args.jax_steps]
        for count in lengths:
            plan += [(name, "fesens", "all", "heat", count, False),
                     (name, "fesens", "√N", "heat", count, True)]
        if not args.no_jax:
            plan += [(name, "JAX", "all", "heat_jax", args.jax_steps, False),
                     (name, "JAX", "√N (nested scan)", "heat_jax", args.jax_steps, True)]
    if args.dynamic != "none":
        name = f"Newmark {args.dynamic} (quad4)"
        plan += [(name, "fesens", "all", "dynamic", args.dynamic_steps, False),
                 (name, "fesens", "√N", "dynamic", args.dynamic_steps, True)]
    results = []
    for problem, code, kept, case, n, checkpointed in plan:
        r = run_case(__file__, case, problem.split()[1], n, checkpointed, args.repeats,
                     timeout=3600)
        if "budget" in r and r["budget"]:
            kept = f"{kept}: {r['budget']}"
        results.append((problem, code, kept, r))
        print(f"  {problem} {code} {kept}: done", file=sys.stderr, flush=True)
    loads.append(load_average())
    print(load_line(loads) + "\n")
    print(f"Backward Euler heat (Δt = {DT}, J = ∫ Σ T² dt, d/dκ per cell) and Newmark "
          f"dynamics (t_end = {DYNAMIC_T_END}, J = ∫ u_tip² dt, d/dE per cell); minima of "
          f"{args.repeats} calls with new inputs each. gradient = value_and_grad; backward = "
          "gradient − forward (checkpointed: the recomputation and the backward sweep); CPU"
          " = the case process's CPU time (JAX: all its threads), which other processes "
          "inflate far less than the wall-clock. RSS = growth of the peak resident set "
          "during one call (the CHOLMOD factor and library buffers included); tracemalloc "
          "= peak of the numpy allocations of one call (fesens only). states MB = the "
          "state vectors kept; factor MB = nnz(L) × 12 bytes. JAX: BCOO + Jacobi-CG (rtol "
          "1e-10) per step in lax.scan, jit; its √N variant keeps B block states plus one "
          "block of L steps (B·L = N). compile = JAX's first calls (not in its times).\n")
    print(report_rows(results))
    print("\nChecks (same problem, fesens vs JAX):")
    by_key: dict[tuple[str, str, int], dict[str, Any]] = {}
    for problem, code, kept, r in results:
        by_key.setdefault((problem, code, r.get("steps", 0)), r)
        if "stats" in r:
            print(f"- {problem}, fesens, {kept}: stats {r['stats']}, numeric "
                  f"factorizations in all calls {r['factorizations']}")
    for (problem, code, n), r in by_key.items():
        ours = by_key.get((problem, "fesens", n), {"error": "no fesens row"})
        if code != "JAX" or "error" in r or "error" in ours:
            continue
        print(f"- {problem}, N = {n}: J fesens {ours['J']:.10g}, JAX {r['J']:.10g} (relative "
              f"difference {abs(ours['J'] - r['J']) / abs(ours['J']):.1e}); gradient · d "
              f"relative difference {abs(ours['g_dot'] - r['g_dot']) / abs(ours['g_dot']):.1e}")
    print("\nTargets:")
    for line in target_lines(results):
        print(f"- {line}")
    print("\nAll timed calls (s), in call order:")
    for problem, code, kept, r in results:
        if "forward_all" in r:
            print(f"- {problem} {code} {kept}: forward "
                  + ", ".join(f"{t:.3g}" for t in r["forward_all"]) + "; gradient "
                  + ", ".join(f"{t:.3g}" for t in r["gradient_all"])
                  + ("; CPU forward " + ", ".join(f"{t:.3g}" for t in r["forward_cpu_all"])
                     + "; CPU gradient "
                     + ", ".join(f"{t:.3g}" for t in r["gradient_cpu_all"])
                     if "forward_cpu_all" in r else ""))
    print(f"\ntotal benchmark wall time: {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
