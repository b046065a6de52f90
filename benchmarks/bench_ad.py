"""AD/adjoint benchmark: what a gradient costs relative to the function it differentiates.

A. FEM gradients (:mod:`fesens.objectives`). Cantilevers in linear elasticity (``left`` side
   clamped): 2D quad4 grids in plane stress with a unit point load at the bottom-right
   corner, 3D hex8 grids with a unit traction on the ``right`` face. SIMP stiffness with
   ``scale = x**3`` at ``x = 0.5`` everywhere, CHOLMOD. For ``J = compliance`` and
   ``J = ‖u‖`` the script times the forward ``J(x)`` and ``value_and_grad(J)(x)`` with
   fesens, and the same two for a hand-written numpy adjoint (:class:`HandAdjoint`: what
   an expert writes, with the same cached-pattern assembly and CHOLMOD symbolic reuse),
   and measures the peak memory of forward-only and of value_and_grad runs.
B. Workload 1: ``grad`` of ``sum(x**2)`` and of ``sum(tanh(x) * exp(-x**2))``,
   n = 100 and 10^6.
C. Workload 2: ``f(x) = Σ_k x·(A_k x)`` with ten constant dense 500x500 matrices: time,
   and the extra memory of the gradient over the forward (tracemalloc peaks).
D. Workload 3: ``‖A(x)⁻¹ b‖`` with the values of a 2D 5-point Laplacian depending on
   ``x`` through :func:`fesens.ad.sparse_matrix`, n = 200 to 10^5, against a
   finite-difference gradient (n + 1 evaluations); up to n = 1000 also its dense version,
   the literal program ``‖solve(A, b)‖`` with ``A_ij = K_ij + x_j²`` (``K`` the same
   Laplacian, dense), traced through ``np.linalg.solve``.
E. First and second derivatives (``grad``, ``grad(grad)``) of the scalar
   functions 5x¹⁰, 3x³(cos x − 10x), exp((5x/2)·sin(x)^(eˣ)) at x = 2, and the n = 100
   gradient of workload 1 and workload 2's gradient, against jitted JAX (when installed,
   in its own process: its first call, i.e. compile time, and its steady state; the
   second derivatives also timed in turn with fesens's in that process, which the
   targets read).

Timings are minima over rounds that call forward and gradient alternately (the machine
this runs on is shared and noisy); every ratio is of two numbers from the same run. Each
part runs in a fresh child process (this script re-invoked with ``--case``), and every
peak-memory measurement in one of its own. A target that is missed is followed by a
cProfile of the function (top entries by own time).

Run ``python benchmarks/bench_ad.py --help`` for the options.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import itertools
import json
import math
import os
import pstats
import random
import statistics
import subprocess
import sys
import time
import timeit
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from _common import (
    GridSize,
    cantilever_model,
    load_average,
    load_line,
    machine_lines,
    megabytes,
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
    timed,
    unit_element_matrix,
)

SIZES = ("400x200", "800x400", "48x24x24")
QUICK_SIZES = ("100x50", "200x100", "12x6x6")
W1_SIZES = (100, 10**6)
W2_N, W2_K = 500, 10
W3_SIZES = (200, 1000, 10**4, 10**5)
QUICK_W3_SIZES = (200, 1000, 10**4)
FD_MEASURED_MAX_N = 1000  # larger n: the finite-difference time is extrapolated
DENSE_MAX_N = 1000  # the dense version of workload 3 up to this n
SEED = 0

PENALTY = 3.0  # SIMP: scale = x**PENALTY
DENSITY = 0.5
OBJECTIVES = {"compliance": "compliance", "norm": "‖u‖"}
MODES = ("forward", "gradient")

# Targets. The FEM ones apply from these sizes on (cells per dimension).
TARGET_FROM_CELLS = {2: 400 * 200, 3: 48 * 24 * 24}
GRADIENT_RATIO = {"compliance": 1.10, "norm": 1.15}  # value_and_grad / forward
HAND_RATIO = 1.05  # fesens value_and_grad / hand-written value_and_grad
MEMORY_RATIO = 1.2  # peak of a value_and_grad run / peak of a forward run
W1_LARGE_RATIO = 4.0  # gradient / forward at n = 10^6
W1_SMALL_SECONDS = 50e-6  # gradient at n = 100
W2_RATIO = 3.0
# Workload 2 gradient memory over the forward: O(n). The tape keeps A_k x for every k
# (K n-vectors); allow twice that.
W2_EXTRA_VECTORS = 2 * W2_K
# Part E: nested ``grad`` on Python floats, and jitted JAX's steady state.
SCALAR_X = 2.0
SCALAR_FIRST_SECONDS, SCALAR_SECOND_SECONDS = 25e-6, 60e-6  # per call, each function
JAX_RATIO = 2.0  # fesens gradient / jitted JAX gradient (steady state), W1 n = 100 and W2
SECOND_JAX_RATIO = 2.0  # fesens grad(grad(f)) / jitted JAX's, each scalar function
SCALAR_ROUNDS = 15  # timeit-style: the median of this many measurements of many calls
ALTERNATING_ROUNDS = 40  # second derivatives, fesens and JAX in turn in one process
#: Seconds per call at fesens 3a7c846 (before the scalar fast paths), part E's case with
#: --threads 1 on this machine; printed beside today's figures.
PREVIOUS_SECONDS = {
    "5x^10/first": 2.19e-05,
    "5x^10/second": 5.95e-05,
    "3x^3 (cos x - 10x)/first": 4.8e-05,
    "3x^3 (cos x - 10x)/second": 0.000184,
    "exp((5x/2) sin(x)^(e^x))/first": 6.06e-05,
    "exp((5x/2) sin(x)^(e^x))/second": 0.000296,
    "w1": 4.38e-05,
    "w2": 0.00181,
}

# Timing rounds: at least MIN_ROUNDS, more while the budget (seconds) lasts. With 3 rounds
# of 3-5 s calls (800x400, 48x24x24) the minima of two implementations that share the same
# CHOLMOD work swung by +-7 % between runs on this shared machine; 5 or more rounds keep the
# minimum of each function near its floor.
FEM_BUDGET, QUICK_FEM_BUDGET = 180.0, 10.0
MIN_ROUNDS, MAX_ROUNDS = 5, 15
SMALL_CALL_SECONDS = 0.02  # fast functions are timed over as many calls as fit in this
CHILD_TIMEOUT = 1800.0
PROFILE_LINES = 14


# --------------------------------------------------------------------------- timing
def per_call_seconds(fn: Callable[[], Any], number: int) -> float:
    """Mean wall time of ``number`` consecutive calls of ``fn`` (``timeit``: the cyclic
    garbage collector is off during the loop)."""
    return timeit.Timer(fn).timeit(number) / number


def calls_per_measurement(fn: Callable[[], Any], seconds_per_measurement: float) -> int:
    """How many calls of ``fn`` take about ``seconds_per_measurement`` (``timeit``'s
    autorange calibration, scaled)."""
    number, elapsed = timeit.Timer(fn).autorange()
    return max(1, round(number * seconds_per_measurement / elapsed))


def alternating_times(calls: dict[str, Callable[[], Any]], *, budget: float,
                      numbers: dict[str, int] | None = None,
                      min_rounds: int = MIN_ROUNDS, max_rounds: int = MAX_ROUNDS
                      ) -> dict[str, Any]:
    """Seconds per call of each function, over rounds that call them in turn.

    Parameters
    ----------
    calls : dict of str to callable
        The (warm) functions; one round times each once, in a shuffled order (seeded), so
        that no function always follows the same one.
    budget : float
        Rounds beyond ``min_rounds`` run while the predicted total stays within it.
    numbers : dict of str to int, optional
        Calls per measurement of each function (default 1).

    Returns
    -------
    dict
        ``"min"`` and ``"median"``: seconds per call of each function (dicts keyed like
        ``calls``); ``"rounds"``: how many rounds ran.
    """
    numbers = numbers or {}
    samples: dict[str, list[float]] = {key: [] for key in calls}
    order, shuffle = list(calls), random.Random(0).shuffle
    start, rounds = time.perf_counter(), 0
    while rounds < max_rounds:
        elapsed = time.perf_counter() - start
        if rounds >= min_rounds and elapsed * (rounds + 1) / rounds > budget:
            break
        shuffle(order)
        for key in order:
            samples[key].append(per_call_seconds(calls[key], numbers.get(key, 1)))
        rounds += 1
    return {"min": {key: min(v) for key, v in samples.items()},
            "median": {key: statistics.median(v) for key, v in samples.items()},
            "rounds": rounds}


def profile_text(calls: dict[str, Callable[[], Any]], seconds_each: float) -> str:
    """cProfile of each (warm) function, called for about ``seconds_each``: top entries."""
    parts = []
    for key, fn in calls.items():
        number = calls_per_measurement(fn, seconds_each)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(number):
            fn()
        profiler.disable()
        stream = io.StringIO()
        stats = pstats.Stats(profiler, stream=stream)
        stats.sort_stats("tottime").print_stats(PROFILE_LINES)
        parts.append(f"{key} ({number} call{'s' * (number > 1)}):\n" + _trim_profile(stream))
    return "\n\n".join(parts)


def _trim_profile(stream: io.StringIO) -> str:
    """The table lines of a pstats report, with the repository and venv paths cut."""
    root = str(Path(__file__).resolve().parents[1]) + "/"
    site = str(Path(np.__file__).resolve().parents[1]) + "/"
    lines = stream.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if "function calls" in line)
    kept = [line.replace(site, "").replace(root, "") for line in lines[start:] if line.strip()]
    return "\n".join(line for line in kept if not line.lstrip().startswith(("Ordered", "List")))


class Drift:
    """Inputs ``x (1 + k 10⁻⁹)``, with k counting the calls of all drifts of the process.

    Every evaluation then sees new matrix values, as in an optimization loop: fesens keeps
    a factorization while the values of the matrix do not change, so evaluating at the very
    same ``x`` again would time a solve instead of a factorization.
    """

    _calls = itertools.count(1)

    def __init__(self, x: np.ndarray, step: float = 1e-9):
        self.x, self.step = x, step

    def __call__(self) -> np.ndarray:
        return self.x * (1.0 + next(self._calls) * self.step)


def bind(functions: dict[str, Callable], inputs: Callable[[], Any]
         ) -> dict[str, Callable[[], Any]]:
    """Closures that call each function at ``inputs()``."""
    return {key: (lambda f=f: f(inputs())) for key, f in functions.items()}


# --------------------------------------------------------------------------- A. FEM
class HandAdjoint:
    """The SIMP compliance / ‖u‖ adjoint an expert writes by hand with numpy and CHOLMOD.

    ``K(x) = Σ_e x_e^p K_e`` on the free dofs (all cells share the unit element matrix
    ``K_e``). Everything that depends on the mesh only is done once: the CSR pattern of
    ``K``, the gather matrix ``G`` with ``data(K) = G x^p`` (``G[slot, e]`` = the entry of
    ``K_e`` that lands in ``slot``), and CHOLMOD's symbolic analysis. An evaluation is one
    sparse mat-vec, one numeric factorization and one solve; the gradient adds the adjoint
    solve ``K λ = ∂J/∂u`` (not for compliance, which is self-adjoint: ``λ = u``) and

        dJ/dx_e = −p x_e^(p−1) λ_eᵀ K_e u_e                 (einsum over all cells)

    Parameters
    ----------
    cell_dofs : numpy.ndarray
        ``(n_cells, nd)`` global dofs of each cell.
    fixed : numpy.ndarray
        Global ids of the clamped dofs (zero displacement).
    KE : numpy.ndarray
        ``(nd, nd)`` element stiffness matrix at unit density.
    load : numpy.ndarray
        ``(n_dofs,)`` load vector.
    penalty : float
        SIMP exponent ``p``.
    """

    def __init__(self, cell_dofs: np.ndarray, fixed: np.ndarray, KE: np.ndarray,
                 load: np.ndarray, penalty: float = PENALTY):
        from sksparse.cholmod import analyze

        n_dofs = load.size
        self.free = np.setdiff1d(np.arange(n_dofs), fixed)
        self.cell_dofs, self.KE, self.load, self.penalty = cell_dofs, KE, load, penalty
        self.K, self.gather = self._pattern(cell_dofs, self.free, n_dofs, KE.ravel())
        self.K.data = self.gather @ np.ones(cell_dofs.shape[0])
        self.factor = analyze(self.K)
        self.load_free = load[self.free]

    @staticmethod
    def _pattern(cell_dofs, free, n_dofs, KE_flat) -> tuple[sp.csc_matrix, sp.csr_matrix]:
        """``K`` (CSC, values unset) on the free dofs and the gather matrix ``G``."""
        n_cells, nd = cell_dofs.shape
        n_free = free.size
        index = np.full(n_dofs, -1, dtype=np.int64)
        index[free] = np.arange(n_free)
        local = index[cell_dofs]
        rows = np.repeat(local, nd, axis=1).ravel()  # entry (e, i, j) -> row local[e, i]
        cols = np.tile(local, (1, nd)).ravel()  # -> column local[e, j]
        kept = np.flatnonzero((rows >= 0) & (cols >= 0))
        keys, slot = np.unique(rows[kept] * n_free + cols[kept], return_inverse=True)
        indptr = np.zeros(n_free + 1, dtype=np.int64)
        np.cumsum(np.bincount(keys // n_free, minlength=n_free), out=indptr[1:])
        # Keys sorted row-major: CSR arrays, which are also the CSC arrays of K = Kᵀ.
        K = sp.csc_matrix((np.zeros(keys.size), keys % n_free, indptr), shape=(n_free,) * 2)
        gather = sp.csr_matrix((KE_flat[kept % (nd * nd)], (slot, kept // (nd * nd))),
                               shape=(keys.size, n_cells))
        return K, gather

    def displacement(self, x: np.ndarray) -> np.ndarray:
        """``u`` on all dofs, ``(n_dofs,)``: assemble, re-factorize, solve."""
        self.K.data = self.gather @ x**self.penalty
        self.factor.cholesky_inplace(self.K)
        u = np.zeros(self.load.size)
        u[self.free] = self.factor(self.load_free)
        return u

    def value(self, x: np.ndarray, objective: str) -> float:
        """``J(x)`` for ``objective`` in ``("compliance", "norm")``."""
        u = self.displacement(x)
        return float(self.load @ u) if objective == "compliance" else float(np.linalg.norm(u))

    def value_and_grad(self, x: np.ndarray, objective: str) -> tuple[float, np.ndarray]:
        """``(J(x), dJ/dx)``, the gradient ``(n_cells,)``."""
        u = self.displacement(x)
        if objective == "compliance":
            return float(self.load @ u), self._sensitivity(x, u, u)
        value = float(np.linalg.norm(u))
        lam = np.zeros_like(u)
        lam[self.free] = self.factor(u[self.free] / value)
        return value, self._sensitivity(x, u, lam)

    def _sensitivity(self, x, u, lam) -> np.ndarray:
        u_cells = u[self.cell_dofs]
        lam_cells = u_cells if lam is u else lam[self.cell_dofs]
        energies = np.einsum("ei,ei->e", lam_cells @ self.KE, u_cells)
        return -self.penalty * x ** (self.penalty - 1.0) * energies


@dataclass
class FemSetup:
    """One FEM problem, ready to evaluate with fesens and with :class:`HandAdjoint`."""

    size: GridSize
    model: Any = field(init=False)
    problem: Any = field(init=False)
    hand: HandAdjoint | None = field(init=False, default=None)
    x: np.ndarray = field(init=False)

    def __post_init__(self):
        from fesens.objectives import Differentiable

        self.model = cantilever_model(self.size, "corner" if self.size.dim == 2 else "traction")
        self.problem = Differentiable(self.model, solver="cholmod")
        self.x = np.full(self.model.mesh.n_cells, DENSITY)

    def add_hand(self) -> None:
        """Build the hand-written adjoint (its pattern, gather matrix, symbolic analysis)."""
        model = self.model
        self.hand = HandAdjoint(model.dofmap.cell_dofs, model.constrained_dofs,
                                unit_element_matrix(model), model.load_vector())

    def functions(self, impl: str, objective: str) -> dict[str, Callable[[np.ndarray], Any]]:
        """``{"forward": J, "gradient": value_and_grad(J)}`` of ``impl`` ("fesens", "hand")."""
        if impl == "hand":
            return {"forward": lambda x: self.hand.value(x, objective),
                    "gradient": lambda x: self.hand.value_and_grad(x, objective)}
        from fesens.ad import value_and_grad
        from fesens.objectives import compliance, displacement_norm

        measure = compliance if objective == "compliance" else displacement_norm

        def J(x):
            return measure(self.problem.solve(scale=x**PENALTY))

        return {"forward": J, "gradient": value_and_grad(J)}

    def calls(self, impl: str, objective: str) -> dict[str, Callable[[], Any]]:
        """:meth:`functions` as closures, at drifting inputs (see :class:`Drift`)."""
        return bind(self.functions(impl, objective), Drift(self.x))


def case_fem_time(label: str, budget: float) -> dict[str, Any]:
    """Forward and value_and_grad times, fesens and hand-written, both objectives."""
    setup = FemSetup(GridSize.parse(label))
    setup.add_hand()
    calls, agreement = {}, {}
    for objective in OBJECTIVES:
        for impl in ("fesens", "hand"):
            for mode, fn in setup.calls(impl, objective).items():
                calls[f"{impl}/{objective}/{mode}"] = fn
        # Warm-up (the first factorization includes the symbolic analysis) and check.
        value, gradient = setup.functions("fesens", objective)["gradient"](setup.x)
        hand_value, hand_gradient = setup.functions("hand", objective)["gradient"](setup.x)
        agreement[objective] = max(
            abs(float(value) - hand_value) / abs(hand_value),
            float(np.abs(gradient - hand_gradient).max() / np.abs(hand_gradient).max()))
    times = alternating_times(calls, budget=budget)
    return {
        "dofs": setup.model.dofmap.n_dofs,
        "seconds": times["min"],
        "medians": times["median"],
        "rounds": times["rounds"],
        "agreement": agreement,
    }


def case_fem_memory(label: str, objective: str, mode: str) -> dict[str, Any]:
    """Peak resident memory of one fesens forward or value_and_grad evaluation.

    After a warm-up call (symbolic analysis, solver caches) the free heap is returned to
    the OS and the high-water mark is reset, so the peak is that of the measured call on
    top of what stays resident (model, pattern, CHOLMOD factor).
    """
    setup = FemSetup(GridSize.parse(label))
    fn = setup.calls("fesens", objective)[mode]
    fn()
    release_free_memory()
    before_peak, resident = peak_rss_mb(), resident_mb()
    if not reset_peak_rss():
        return {"error": "cannot reset the peak RSS (/proc/self/clear_refs)"}
    fn()
    run_peak = peak_rss_mb()
    return {"resident_mb": resident, "run_peak_mb": run_peak,
            "process_peak_mb": max(before_peak, run_peak)}


# --------------------------------------------------------------------------- B, C, D
def sum_of_squares(x):
    """``Σ x²``."""
    return np.sum(x**2)


def sum_of_elementwise(x):
    """``Σ tanh(x) exp(−x²)``."""
    return np.sum(np.tanh(x) * np.exp(-(x**2)))


W1_FUNCTIONS = {"sum(x**2)": sum_of_squares, "sum(tanh(x)*exp(-x**2))": sum_of_elementwise}


def function_calls(f: Callable, x: np.ndarray, drift: bool = False
                   ) -> dict[str, Callable[[], Any]]:
    """``{"forward": f(x), "gradient": grad(f)(x)}`` as closures (``grad`` built once),
    at ``x`` or, with ``drift``, at :class:`Drift` inputs."""
    from fesens.ad import grad

    return bind({"forward": f, "gradient": grad(f)}, Drift(x) if drift else lambda: x)


def workload1_calls(n: int, name: str) -> dict[str, Callable[[], Any]]:
    """Workload 1: a :data:`W1_FUNCTIONS` entry at a standard normal ``x``."""
    x = np.random.default_rng(SEED).standard_normal(n)
    return function_calls(W1_FUNCTIONS[name], x)


def quadratic_forms(matrices: Sequence[np.ndarray]) -> Callable:
    """``f(x) = Σ_k x·(A_k x)`` for constant matrices ``A_k``."""

    def f(x):
        return sum(x @ (A @ x) for A in matrices)

    return f


def workload2_calls(n: int, k: int) -> dict[str, Callable[[], Any]]:
    """Workload 2: :func:`quadratic_forms` of ``k`` random ``n x n`` matrices."""
    rng = np.random.default_rng(SEED)
    matrices = [rng.standard_normal((n, n)) for _ in range(k)]
    return function_calls(quadratic_forms(matrices), rng.standard_normal(n))


def grid_shape(n: int) -> tuple[int, int]:
    """The most nearly square ``(rows, cols)`` grid with ``rows * cols = n``."""
    rows = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    return rows, n // rows


class LaplacianSolveNorm:
    """Workload 3: ``f(x) = ‖A(x)⁻¹ b‖`` on the pattern of a 2D 5-point Laplacian.

    ``A(x)_ij = A0_ij (1 + ½ sin x_i sin x_j)`` with ``A0`` = Laplacian + identity on a
    :func:`grid_shape` grid of ``n`` nodes: symmetric, and positive definite for ``x`` in
    [0.5, 1.5] (diagonally dominant), so CHOLMOD factorizes it (the symbolic analysis once).
    """

    def __init__(self, n: int):
        from fesens.ad import SparsePattern

        rows, cols = grid_shape(n)
        A0 = (sp.kronsum(_path_laplacian(cols), _path_laplacian(rows), format="csr")
              + sp.identity(n, format="csr"))
        self.pattern = SparsePattern.of(A0)
        self.base = sp.csr_matrix(A0).data.copy()
        self.b = np.random.default_rng(SEED).standard_normal(n)
        self.grid = (rows, cols)

    def __call__(self, x):
        from fesens.ad import solve, sparse_matrix

        p = self.pattern
        data = self.base * (1.0 + 0.5 * np.sin(x[p.rows]) * np.sin(x[p.cols]))
        return np.linalg.norm(solve(sparse_matrix(p, data), self.b, solver="cholmod"))


class DenseSolveNorm:
    """Workload 3, dense: ``f(x) = ‖A(x)⁻¹ b‖`` with ``A_ij = K_ij + x_j²``, ``K`` the
    matrix of :class:`LaplacianSolveNorm` as a dense array (plain numpy code)."""

    def __init__(self, sparse: LaplacianSolveNorm):
        p = sparse.pattern
        self.K = np.zeros(p.shape)
        self.K[p.rows, p.cols] = sparse.base
        self.b = sparse.b

    def __call__(self, x):
        A = self.K + x[None, :] ** 2
        return np.linalg.norm(np.linalg.solve(A, self.b))


def directional_difference(f: Callable, x: np.ndarray, gradient: np.ndarray,
                           step: float = 1e-6) -> float:
    """Largest relative difference between ``∇f·h`` and central differences, 3 directions."""
    worst = 0.0
    for h in np.random.default_rng(SEED).standard_normal((3, x.size)):
        fd = (float(f(x + step * h)) - float(f(x - step * h))) / (2 * step)
        worst = max(worst, abs(fd - gradient @ h) / abs(gradient @ h))
    return worst


def _path_laplacian(m: int) -> sp.csr_matrix:
    return sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m), format="csr")


def workload3_problem(n: int) -> tuple[LaplacianSolveNorm, np.ndarray]:
    """Workload 3: :class:`LaplacianSolveNorm` and ``x`` uniform in [0.5, 1.5]."""
    return LaplacianSolveNorm(n), np.random.default_rng(SEED + 1).uniform(0.5, 1.5, n)


def workload3_calls(n: int) -> dict[str, Callable[[], Any]]:
    return function_calls(*workload3_problem(n), drift=True)


def finite_difference_gradient(f: Callable, x: np.ndarray, step: float = 1e-7) -> np.ndarray:
    """One-sided differences: ``n + 1`` evaluations of ``f``."""
    f0 = float(f(x))
    out = np.empty_like(x)
    for i in range(x.size):
        shifted = x.copy()
        shifted[i] += step
        out[i] = (float(f(shifted)) - f0) / step
    return out


def timed_pair(calls: dict[str, Callable[[], Any]], budget: float) -> dict[str, Any]:
    """Warm both calls, then time them alternately (fast ones over many calls)."""
    for fn in calls.values():
        fn()
    numbers = {key: calls_per_measurement(fn, SMALL_CALL_SECONDS) for key, fn in calls.items()}
    times = alternating_times(calls, budget=budget, numbers=numbers, min_rounds=5,
                              max_rounds=200)
    return {**times["min"], "medians": times["median"], "rounds": times["rounds"],
            "calls": numbers}


def case_workload1(sizes: list[int]) -> dict[str, Any]:
    return {f"{name}@{n}": timed_pair(workload1_calls(n, name), budget=3.0)
            for n in sizes for name in W1_FUNCTIONS}


def traced_peak_bytes(fn: Callable[[], Any]) -> int:
    """Peak bytes allocated (tracemalloc) during one call of ``fn``."""
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def case_workload2(n: int, k: int) -> dict[str, Any]:
    calls = workload2_calls(n, k)
    result = timed_pair(calls, budget=3.0)
    result["peak_bytes"] = {key: min(traced_peak_bytes(fn) for _ in range(3))
                            for key, fn in calls.items()}
    return result


def case_workload3(sizes: list[int]) -> dict[str, Any]:
    from fesens.ad import grad

    results = {}
    for n in sizes:
        f, x = workload3_problem(n)
        calls = function_calls(f, x, drift=True)
        result = timed_pair(calls, budget=6.0)
        result.update(grid=f.grid, nnz=f.pattern.nnz)
        if n <= FD_MEASURED_MAX_N:
            result["fd_s"], fd = timed(lambda f=f, x=x: finite_difference_gradient(f, x))
            ad = grad(f)(x)
            result["fd_difference"] = float(np.abs(fd - ad).max() / np.abs(ad).max())
        if n <= DENSE_MAX_N:
            dense = DenseSolveNorm(f)
            result["dense"] = timed_pair(function_calls(dense, x, drift=True), budget=6.0)
            result["dense"]["fd_difference"] = directional_difference(dense, x, grad(dense)(x))
        results[str(n)] = result
    return results


# --------------------------------------------------------------------------- E
def scalar_functions(xp: Any) -> dict[str, Callable]:
    """The scalar workload of part E, written against the numpy namespace ``xp``."""
    return {
        "5x^10": lambda x: 5 * x**10,
        "3x^3 (cos x - 10x)": lambda x: 3 * x**3 * (xp.cos(x) - 10 * x),
        "exp((5x/2) sin(x)^(e^x))": lambda x: xp.exp((5 * x / 2) * xp.sin(x) ** xp.exp(x)),
    }


def steady_seconds(fn: Callable[[], Any]) -> dict[str, float]:
    """Median and minimum seconds per call of a warm ``fn`` over :data:`SCALAR_ROUNDS`
    measurements of many calls each (``timeit``: the cyclic GC is off while timing)."""
    fn()
    number = calls_per_measurement(fn, SMALL_CALL_SECONDS)
    samples = [per_call_seconds(fn, number) for _ in range(SCALAR_ROUNDS)]
    return {"median": statistics.median(samples), "min": min(samples), "calls": number}


def array_workloads(xp_asarray: Callable = np.asarray) -> dict[str, Any]:
    """Inputs of the two array workloads part E compares: W1 ``sum(tanh(x) exp(-x²))`` at
    n = 100 and W2's ten quadratic forms of n = 500 (the same values as parts B and C)."""
    x1 = np.random.default_rng(SEED).standard_normal(100)
    rng = np.random.default_rng(SEED)
    matrices = [rng.standard_normal((W2_N, W2_N)) for _ in range(W2_K)]
    x2 = rng.standard_normal(W2_N)
    return {"w1_x": xp_asarray(x1), "w2_matrices": [xp_asarray(A) for A in matrices],
            "w2_x": xp_asarray(x2)}


def case_scalar() -> dict[str, Any]:
    """fesens: first and second derivatives of :func:`scalar_functions` at x = 2 (nested
    ``grad`` on a Python float), and the W1 (n = 100) and W2 gradients."""
    from fesens.ad import grad

    result: dict[str, Any] = {"seconds": {}, "values": {}}
    for name, f in scalar_functions(np).items():
        for order, d in (("first", grad(f)), ("second", grad(grad(f)))):
            result["seconds"][f"{name}/{order}"] = steady_seconds(lambda d=d: d(SCALAR_X))
            result["values"][f"{name}/{order}"] = float(d(SCALAR_X))
    data = array_workloads()
    w1, w2 = grad(sum_of_elementwise), grad(quadratic_forms(data["w2_matrices"]))
    result["seconds"]["w1"] = steady_seconds(lambda: w1(data["w1_x"]))
    result["seconds"]["w2"] = steady_seconds(lambda: w2(data["w2_x"]))
    return result


def case_jax() -> dict[str, Any]:
    """Jitted JAX (float64, CPU) on part E's functions: the first call's time (tracing and
    XLA compilation) and the steady state."""
    if os.environ.get("OMP_NUM_THREADS") == "1":  # --threads 1: XLA's CPU pool too
        os.environ["XLA_FLAGS"] = ("--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")
    try:
        import jax
    except ImportError:
        return {"error": "jax is not installed"}
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    calls = {}
    for name, f in scalar_functions(jnp).items():
        calls[f"{name}/first"] = (jax.jit(jax.grad(f)), jnp.float64(SCALAR_X))
        calls[f"{name}/second"] = (jax.jit(jax.grad(jax.grad(f))), jnp.float64(SCALAR_X))
    data = array_workloads(jnp.asarray)
    calls["w1"] = (jax.jit(jax.grad(lambda x: jnp.sum(jnp.tanh(x) * jnp.exp(-(x**2))))),
                   data["w1_x"])
    matrices = data["w2_matrices"]
    calls["w2"] = (jax.jit(jax.grad(lambda x: sum(x @ (A @ x) for A in matrices))),
                   data["w2_x"])
    result: dict[str, Any] = {"seconds": {}, "compile": {}, "values": {},
                              "version": jax.__version__}
    for key, (fn, x) in calls.items():
        start = time.perf_counter()
        value = fn(x).block_until_ready()
        result["compile"][key] = time.perf_counter() - start
        result["seconds"][key] = steady_seconds(lambda fn=fn, x=x: fn(x).block_until_ready())
        if np.ndim(value) == 0:
            result["values"][key] = float(value)
    result["alternating"] = second_derivatives_alternating(
        {key: call for key, call in calls.items() if key.endswith("/second")})
    return result


def second_derivatives_alternating(jax_calls: dict[str, tuple]) -> dict[str, Any]:
    """fesens's ``grad(grad(f))`` and jitted JAX's, timed in turn in this one process
    (:data:`ALTERNATING_ROUNDS` rounds of many calls each): both see the same load."""
    from fesens.ad import grad

    functions = scalar_functions(np)
    calls, numbers = {}, {}
    for key, (fn, x) in jax_calls.items():
        mine = grad(grad(functions[key.rsplit("/", 1)[0]]))
        calls[f"fesens {key}"] = lambda d=mine: d(SCALAR_X)
        calls[f"jax {key}"] = lambda fn=fn, x=x: fn(x).block_until_ready()
    for key, fn in calls.items():
        fn()
        numbers[key] = calls_per_measurement(fn, SMALL_CALL_SECONDS)
    times = alternating_times(calls, budget=0.0, numbers=numbers,
                              min_rounds=ALTERNATING_ROUNDS, max_rounds=ALTERNATING_ROUNDS)
    return {key: {side: {stat: times[stat][f"{side} {key}"] for stat in ("median", "min")}
                  for side in ("fesens", "jax")} for key in jax_calls}


# --------------------------------------------------------------------------- profiles
def case_profile(subject: list) -> dict[str, Any]:
    """cProfile of the forward and gradient calls of ``subject`` (see :func:`subject_calls`)."""
    calls = subject_calls(subject)
    for fn in calls.values():
        fn()
    return {"text": profile_text(calls, seconds_each=3.0)}


def subject_calls(subject: list) -> dict[str, Callable[[], Any]]:
    """The calls of ``["fem", label, objective]``, ``["w1", n, name]``, ``["w2", n, k]``
    or ``["w3", n]``."""
    kind, *args = subject
    if kind == "fem":
        label, objective = args
        return FemSetup(GridSize.parse(label)).calls("fesens", objective)
    makers = {"w1": workload1_calls, "w2": workload2_calls, "w3": workload3_calls}
    return makers[kind](*args)


def case_baseline() -> dict[str, Any]:
    """Peak memory of a process that only imports what the FEM cases use."""
    import sksparse.cholmod  # noqa: F401

    import fesens.objectives  # noqa: F401

    return {"peak_mb": peak_rss_mb()}


CASES: dict[str, Callable[..., dict[str, Any]]] = {
    "baseline": case_baseline,
    "fem_time": case_fem_time,
    "fem_memory": case_fem_memory,
    "workload1": case_workload1,
    "workload2": case_workload2,
    "workload3": case_workload3,
    "profile": case_profile,
    "scalar": case_scalar,
    "jax": case_jax,
}


def run_logged(case: str, *args: Any) -> dict[str, Any]:
    """Run a case of this script in a fresh process, logging its wall time to stderr."""
    print(f"  {case:<10} {' '.join(map(str, args))[:40]:<40}", end=" ", file=sys.stderr,
          flush=True)
    elapsed, result = timed(lambda: run_case(__file__, case, *args, timeout=CHILD_TIMEOUT))
    print(f"{elapsed:6.1f} s  {result.get('error', 'ok')}", file=sys.stderr, flush=True)
    return result


# --------------------------------------------------------------------------- the run
@dataclass
class Run:
    """Settings and results of one benchmark run."""

    sizes: list[GridSize]
    parts: str
    budget: float
    w3_sizes: tuple[int, ...]
    profiles: bool
    load: list[tuple[float, ...]] = field(default_factory=list)
    baseline: dict[str, Any] = field(default_factory=dict)
    fem: dict[str, dict[str, Any]] = field(default_factory=dict)
    memory: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    w1: dict[str, Any] = field(default_factory=dict)
    w2: dict[str, Any] = field(default_factory=dict)
    w3: dict[str, Any] = field(default_factory=dict)
    scalar: dict[str, Any] = field(default_factory=dict)
    jax: dict[str, Any] = field(default_factory=dict)
    profile_texts: dict[str, str] = field(default_factory=dict)


def measure(run: Run) -> None:
    """Run every case, in order, logging progress to stderr."""
    run.load.append(load_average())
    run.baseline = run_logged("baseline")
    if "A" in run.parts:
        for size in run.sizes:
            run.fem[size.label] = run_logged("fem_time", size.label, run.budget)
            for objective in OBJECTIVES:
                for mode in MODES:
                    run.memory[(size.label, objective, mode)] = run_logged(
                        "fem_memory", size.label, objective, mode)
    if "B" in run.parts:
        run.w1 = run_logged("workload1", list(W1_SIZES))
    if "C" in run.parts:
        run.w2 = run_logged("workload2", W2_N, W2_K)
    if "D" in run.parts:
        run.w3 = run_logged("workload3", list(run.w3_sizes))
    if "E" in run.parts:
        run.scalar = run_logged("scalar")
        run.jax = run_logged("jax")
    run.load.append(load_average())
    if run.profiles:
        for name, subject in missed_subjects(run).items():
            run.profile_texts[name] = run_logged("profile", subject).get("text", "(failed)")


# --------------------------------------------------------------------------- checks
@dataclass
class Check:
    """One target: its description, outcome, and what to profile when it is missed."""

    text: str
    passed: bool
    subject: list | None = None


def targets_apply(size: GridSize) -> bool:
    """The FEM targets hold from the grid sizes of :data:`TARGET_FROM_CELLS` on."""
    return size.n_cells >= TARGET_FROM_CELLS[size.dim]


def fem_checks(run: Run) -> list[Check]:
    found = []
    for size in run.sizes if "A" in run.parts else []:
        fem = run.fem.get(size.label, {})
        if "seconds" not in fem:
            found.append(Check(f"{size.label}: FEM timing case ran ({fem.get('error')})", False))
            continue
        if not targets_apply(size):
            continue
        t = fem["seconds"]
        for objective, name in OBJECTIVES.items():
            subject = ["fem", size.label, objective]
            value = t[f"fesens/{objective}/gradient"] / t[f"fesens/{objective}/forward"]
            limit = GRADIENT_RATIO[objective]
            found.append(Check(f"{size.label} {name}: value_and_grad / forward = {value:.3f} "
                               f"<= {limit}", value <= limit, subject))
            value = t[f"fesens/{objective}/gradient"] / t[f"hand/{objective}/gradient"]
            found.append(Check(f"{size.label} {name}: fesens / hand-written value_and_grad = "
                               f"{value:.3f} <= {HAND_RATIO}", value <= HAND_RATIO, subject))
            found.append(memory_check(run, size, objective))
    return found


def memory_check(run: Run, size: GridSize, objective: str) -> Check:
    forward = run.memory.get((size.label, objective, "forward"), {})
    gradient = run.memory.get((size.label, objective, "gradient"), {})
    name = f"{size.label} {OBJECTIVES[objective]}"
    if "run_peak_mb" not in forward or "run_peak_mb" not in gradient:
        error = forward.get("error") or gradient.get("error")
        return Check(f"{name}: memory cases ran ({error})", False)
    value = gradient["run_peak_mb"] / forward["run_peak_mb"]
    return Check(f"{name}: peak RSS value_and_grad / forward = {value:.3f} <= {MEMORY_RATIO}",
                 value <= MEMORY_RATIO)


def workload_checks(run: Run) -> list[Check]:
    found = []
    for key, result in run.w1.items():
        name, n = key.rsplit("@", 1)
        if "gradient" not in result:
            continue
        subject = ["w1", int(n), name]
        if int(n) >= 10**6:
            value = result["gradient"] / result["forward"]
            found.append(Check(f"workload 1 {name}, n = {n}: gradient / forward = {value:.2f} "
                               f"<= {W1_LARGE_RATIO:g}", value <= W1_LARGE_RATIO, subject))
        elif int(n) <= 100:
            value = result["gradient"]
            found.append(Check(f"workload 1 {name}, n = {n}: gradient {value * 1e6:.1f} µs "
                               f"< {W1_SMALL_SECONDS * 1e6:.0f} µs", value < W1_SMALL_SECONDS,
                               subject))
    if "gradient" in run.w2:
        w2 = run.w2
        value = w2["gradient"] / w2["forward"]
        found.append(Check(f"workload 2: gradient / forward = {value:.2f} <= {W2_RATIO:g}",
                           value <= W2_RATIO, ["w2", W2_N, W2_K]))
        extra = w2_extra_bytes(w2)
        limit = W2_EXTRA_VECTORS * W2_N * 8
        found.append(Check(f"workload 2: gradient extra memory {extra} B <= "
                           f"{W2_EXTRA_VECTORS} n·8 = {limit} B (O(n), not K n²·8 = "
                           f"{W2_K * W2_N**2 * 8 / 1e6:.0f} MB)", extra <= limit))
    for label, result in (("workload 1", run.w1), ("workload 2", run.w2),
                          ("workload 3", run.w3)):
        if "error" in result:
            found.append(Check(f"{label} case ran ({result['error']})", False))
    return found


def w2_extra_bytes(w2: dict[str, Any]) -> int:
    peaks = w2["peak_bytes"]
    return peaks["gradient"] - peaks["forward"]


def scalar_checks(run: Run) -> list[Check]:
    """Part E: per-call limits of the scalar derivatives; second derivatives, W1 and W2
    against jitted JAX."""
    if "E" not in run.parts:
        return []
    if "seconds" not in run.scalar:
        return [Check(f"part E fesens case ran ({run.scalar.get('error')})", False)]
    found, mine = [], run.scalar["seconds"]
    for key, timing in mine.items():
        if key in ("w1", "w2"):
            continue
        limit = SCALAR_FIRST_SECONDS if key.endswith("/first") else SCALAR_SECOND_SECONDS
        found.append(Check(f"{key} derivative: {timing['median'] * 1e6:.1f} µs < "
                           f"{limit * 1e6:.0f} µs", timing["median"] < limit))
    if "seconds" not in run.jax:
        return found + [Check(f"part E JAX case ran ({run.jax.get('error')})", False)]
    compared = [(key, key, SECOND_JAX_RATIO) for key in mine if key.endswith("/second")]
    compared += [("w1", "W1 sum(tanh(x)*exp(-x**2)), n = 100", JAX_RATIO),
                 ("w2", f"W2 ten quadratic forms, n = {W2_N}", JAX_RATIO)]
    alternating = run.jax.get("alternating", {})
    for key, label, limit in compared:
        # both the ratio of medians and that of minima: a loaded machine slows either side;
        # second derivatives as timed in turn in one process where that ran
        ours, theirs = ((alternating[key]["fesens"], alternating[key]["jax"])
                        if key in alternating else (mine[key], run.jax["seconds"][key]))
        median, least = (ours[k] / theirs[k] for k in ("median", "min"))
        found.append(Check(f"{label}: fesens / jitted JAX = {median:.2f} (medians), "
                           f"{least:.2f} (minima) <= {limit:g}", max(median, least) <= limit))
    return found


def checks(run: Run) -> list[Check]:
    return fem_checks(run) + workload_checks(run) + scalar_checks(run)


def missed_subjects(run: Run) -> dict[str, list]:
    """What to profile: each missed target's function, once, at its smallest size."""
    subjects: dict[str, list] = {}
    for check in checks(run):
        if check.passed or check.subject is None:
            continue
        kind = check.subject[0] + (str(check.subject[2:]) if check.subject[0] == "fem"
                                   else str(check.subject[1:]))
        subjects.setdefault(kind, check.subject)
    return {" ".join(map(str, subject)): subject for subject in subjects.values()}


# --------------------------------------------------------------------------- reporting
def target(text: str, applies: bool) -> str:
    return text if applies else "(n/a)"


def spread(mins: dict[str, float], medians: dict[str, float], keys: Sequence[str]) -> str:
    """Noise indicator: the largest ``median / min - 1`` among ``keys``, in percent."""
    return f"{max(medians[key] / mins[key] - 1.0 for key in keys):.0%}"


def fem_time_table(run: Run) -> str:
    headers = ["size", "dofs", "J", "fesens fwd", "fesens v&g", "v&g / fwd", "target",
               "hand fwd", "hand v&g", "hand v&g / fwd", "fesens / hand v&g", "target",
               "|Δ∇J| / |∇J|", "rounds", "spread"]
    rows = []
    for size in run.sizes:
        fem = run.fem.get(size.label, {})
        if "seconds" not in fem:
            rows.append([size.label, f"failed: {fem.get('error')}", *[""] * (len(headers) - 2)])
            continue
        t, applies = fem["seconds"], targets_apply(size)
        for objective, name in OBJECTIVES.items():
            f_fwd, f_vg = t[f"fesens/{objective}/forward"], t[f"fesens/{objective}/gradient"]
            h_fwd, h_vg = t[f"hand/{objective}/forward"], t[f"hand/{objective}/gradient"]
            rows.append([
                size.label, str(fem["dofs"]), name, seconds(f_fwd), seconds(f_vg),
                ratio(f_vg, f_fwd), target(f"<= {GRADIENT_RATIO[objective]}", applies),
                seconds(h_fwd), seconds(h_vg), ratio(h_vg, h_fwd), ratio(f_vg, h_vg),
                target(f"<= {HAND_RATIO}", applies), f"{fem['agreement'][objective]:.1e}",
                str(fem["rounds"]),
                spread(t, fem["medians"], [f"{impl}/{objective}/{mode}" for impl in
                                           ("fesens", "hand") for mode in MODES]),
            ])
    return table(headers, rows)


def fem_memory_table(run: Run) -> str:
    headers = ["size", "J", "resident", "fwd peak", "v&g peak", "v&g / fwd", "target",
               "fwd +MB", "v&g +MB", "process peak fwd", "process peak v&g"]
    rows = []
    for size in run.sizes:
        for objective, name in OBJECTIVES.items():
            forward = run.memory.get((size.label, objective, "forward"), {})
            gradient = run.memory.get((size.label, objective, "gradient"), {})
            if "run_peak_mb" not in forward or "run_peak_mb" not in gradient:
                error = forward.get("error") or gradient.get("error")
                rows.append([size.label, name, f"failed: {error}", *[""] * (len(headers) - 3)])
                continue
            rows.append([
                size.label, name, megabytes(forward["resident_mb"]),
                megabytes(forward["run_peak_mb"]), megabytes(gradient["run_peak_mb"]),
                ratio(gradient["run_peak_mb"], forward["run_peak_mb"]),
                target(f"<= {MEMORY_RATIO}", targets_apply(size)),
                megabytes(forward["run_peak_mb"] - forward["resident_mb"]),
                megabytes(gradient["run_peak_mb"] - gradient["resident_mb"]),
                megabytes(forward["process_peak_mb"]), megabytes(gradient["process_peak_mb"]),
            ])
    return table(headers, rows)


def microseconds(value: float) -> str:
    return f"{value * 1e6:.3g} µs" if value < 1e-3 else seconds(value)


def workload1_table(run: Run) -> str:
    headers = ["f", "n", "forward", "gradient", "gradient / forward", "target", "calls x rounds",
               "spread"]
    rows = []
    for key, result in run.w1.items():
        if "gradient" not in result:
            continue
        name, n = key.rsplit("@", 1)
        goal = (f"<= {W1_LARGE_RATIO:g}" if int(n) >= 10**6
                else f"gradient < {W1_SMALL_SECONDS * 1e6:.0f} µs")
        rows.append([name, n, microseconds(result["forward"]), microseconds(result["gradient"]),
                     ratio(result["gradient"], result["forward"]), goal,
                     f"{result['calls']['gradient']} x {result['rounds']}",
                     spread(result, result["medians"], MODES)])
    return table(headers, rows)


def workload2_table(run: Run) -> str:
    w2 = run.w2
    if "gradient" not in w2:
        return f"failed: {w2.get('error')}"
    peaks, extra = w2["peak_bytes"], w2_extra_bytes(w2)
    headers = ["n", "K", "forward", "gradient", "gradient / forward", "target",
               "peak B fwd", "peak B grad", "extra B", "extra / (n·8)", "target",
               "K n²·8 B", "spread"]
    return table(headers, [[
        str(W2_N), str(W2_K), microseconds(w2["forward"]), microseconds(w2["gradient"]),
        ratio(w2["gradient"], w2["forward"]), f"<= {W2_RATIO:g}", str(peaks["forward"]),
        str(peaks["gradient"]), str(extra), f"{extra / (W2_N * 8):.1f}",
        f"<= {W2_EXTRA_VECTORS}", str(W2_K * W2_N**2 * 8), spread(w2, w2["medians"], MODES),
    ]])


def workload3_table(run: Run) -> str:
    headers = ["n", "grid", "nnz(A)", "forward", "gradient", "gradient / forward",
               "FD gradient (n+1 evals)", "FD / gradient", "FD vs AD max rel. diff.", "spread",
               "dense forward", "dense gradient", "dense / sparse gradient",
               "dense FD vs AD"]
    rows = []
    for n, result in run.w3.items():
        if not isinstance(result, dict) or "gradient" not in result:
            continue
        measured = "fd_s" in result
        fd = result["fd_s"] if measured else (int(n) + 1) * result["forward"]
        rows.append([
            n, "x".join(map(str, result["grid"])), str(result["nnz"]),
            microseconds(result["forward"]), microseconds(result["gradient"]),
            ratio(result["gradient"], result["forward"]),
            seconds(fd) + ("" if measured else " (est.)"), f"{fd / result['gradient']:.3g}",
            f"{result['fd_difference']:.1e}" if measured else "-",
            spread(result, result["medians"], MODES), *dense_cells(result),
        ])
    return table(headers, rows)


def dense_cells(result: dict[str, Any]) -> list[str]:
    """The dense version's columns of a workload 3 row (``-`` above :data:`DENSE_MAX_N`)."""
    dense = result.get("dense")
    if not dense:
        return ["-"] * 4
    return [microseconds(dense["forward"]), microseconds(dense["gradient"]),
            ratio(dense["gradient"], result["gradient"]), f"{dense['fd_difference']:.1e}"]


def in_turn(timings: dict[str, Any]) -> str:
    """``fesens, JAX, ratio`` (medians, minima in brackets) of one alternating timing."""
    ours, theirs = timings["fesens"], timings["jax"]
    return (f"{microseconds(ours['median'])} ({microseconds(ours['min'])}), "
            f"{microseconds(theirs['median'])} ({microseconds(theirs['min'])}), "
            f"{ratio(ours['median'], theirs['median'])} ({ratio(ours['min'], theirs['min'])})")


def scalar_table(run: Run) -> str:
    mine = run.scalar.get("seconds")
    if not mine:
        return f"failed: {run.scalar.get('error')}"
    theirs = run.jax.get("seconds", {})
    alternating = run.jax.get("alternating", {})
    headers = ["function", "derivative", "fesens", "previous", "target", "jitted JAX",
               "fesens / JAX", "in turn: fesens, JAX, fesens / JAX",
               "JAX first call (compile)", "|fesens - JAX| / |JAX|"]
    rows = []
    for key, timing in mine.items():
        name, order = key.rsplit("/", 1) if key not in ("w1", "w2") else (
            {"w1": "W1 sum(tanh(x)*exp(-x**2)), n = 100",
             "w2": f"W2 Σ_k x·(A_k x), n = {W2_N}, K = {W2_K}"}[key], "gradient")
        goal = {"first": f"< {SCALAR_FIRST_SECONDS * 1e6:.0f} µs",
                "second": f"< {SCALAR_SECOND_SECONDS * 1e6:.0f} µs, "
                          f"<= {SECOND_JAX_RATIO:g} x JAX"}.get(
                    order, f"<= {JAX_RATIO:g} x JAX")
        jax_timing = theirs.get(key)
        value, jax_value = run.scalar["values"].get(key), run.jax.get("values", {}).get(key)
        rows.append([
            name, order, f"{microseconds(timing['median'])} ({microseconds(timing['min'])})",
            microseconds(PREVIOUS_SECONDS[key]) if key in PREVIOUS_SECONDS else "-", goal,
            microseconds(jax_timing["median"]) if jax_timing else "-",
            f"{ratio(timing['median'], jax_timing['median'])} "
            f"({ratio(timing['min'], jax_timing['min'])})" if jax_timing else "-",
            in_turn(alternating[key]) if key in alternating else "-",
            seconds(run.jax["compile"][key]) if jax_timing else "-",
            f"{abs(value - jax_value) / abs(jax_value):.1e}"
            if value is not None and jax_value is not None else "-",
        ])
    return table(headers, rows)


def source_line() -> str:
    """The fesens commit measured, and whether its working tree has local changes."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--",
                                  "fesens"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "fesens source: unknown (no git)"
    count = len(changed.stdout.splitlines())
    return f"fesens source: git {commit}" + (
        f" + uncommitted changes in {count} path(s) under fesens/" if count else "")


def header(run: Run) -> str:
    return "\n".join([
        *machine_lines(("numpy", "scipy", "scikit-sparse")),
        source_line(),
        load_line(run.load),
        f"baseline peak RSS of a case process (imports only): "
        f"{megabytes(run.baseline.get('peak_mb'))} MB",
        f"timings: minimum over rounds that call the functions compared in a shuffled order "
        f"(FEM: at least "
        f"{MIN_ROUNDS} rounds, more within {run.budget:.0f} s per size); spread = largest "
        "median / minimum - 1 among a row's timings (a noise indicator)",
    ])


def report(run: Run) -> str:
    found = checks(run)
    sections = ["# fesens AD/adjoint benchmark", "", header(run), ""]
    if "A" in run.parts:
        sections += [
            "## A. FEM gradients: fesens vs a hand-written numpy adjoint (CHOLMOD)", "",
            f"J(x) = objective(problem.solve(scale=x**{PENALTY:g})) at x = {DENSITY} in every "
            "cell (the k-th timed call at x (1 + k 1e-9), so that each evaluation factorizes: "
            "fesens keeps a factorization while the matrix values are unchanged); 2D: point "
            "load at the bottom-right corner, 3D: traction on the right face. "
            "fwd = J(x); v&g = value_and_grad(J)(x); hand = HandAdjoint (gather-matrix "
            "assembly, CHOLMOD symbolic analysis reused, einsum sensitivities, no adjoint "
            "solve for compliance). |Δ∇J| / |∇J|: fesens vs hand-written gradient. "
            f"Targets apply from {400 * 200} cells (2D) and {48 * 24 * 24} cells (3D) on.", "",
            fem_time_table(run), "",
            "Peak resident memory (MB) of one fesens evaluation, each in its own process: "
            "after a warm-up evaluation the high-water mark is reset, so 'peak' is the peak "
            "of the measured evaluation including what stays resident (model, pattern, "
            "CHOLMOD factor: 'resident'); +MB = peak - resident; process peak = ru_maxrss "
            "of the whole process (pattern build included).", "",
            fem_memory_table(run), "",
        ]
    if "B" in run.parts:
        sections += ["## B. Workload 1: elementwise functions", "",
                     "forward = plain numpy f(x); gradient = grad(f)(x) (grad built once).",
                     "", workload1_table(run), ""]
    if "C" in run.parts:
        sections += ["## C. Workload 2: f(x) = Σ_k x·(A_k x), constant dense A_k", "",
                     "peak B = tracemalloc peak of one call (the A_k allocated before); "
                     "extra = gradient peak - forward peak.", "", workload2_table(run), ""]
    if "D" in run.parts:
        sections += ["## D. Workload 3: ‖A(x)⁻¹ b‖, A(x) on a 5-point Laplacian pattern", "",
                     "A_ij = A0_ij (1 + sin x_i sin x_j / 2), CHOLMOD; x uniform in [0.5, 1.5] "
                     "(the k-th timed call at x (1 + k 1e-9): every call factorizes). "
                     "FD gradient: one-sided "
                     f"differences, measured up to n = {FD_MEASURED_MAX_N}, else (n + 1) x "
                     f"forward. Dense (n <= {DENSE_MAX_N}): A_ij = K_ij + x_j² with K that "
                     "Laplacian as a dense array, np.linalg.solve (LU); its FD check: central "
                     "differences along 3 directions.", "", workload3_table(run), ""]
    if "E" in run.parts:
        sections += ["## E. Scalar derivatives (nested grad on a Python float) and jitted JAX",
                     "", f"x = {SCALAR_X:g}; fesens: grad(f), grad(grad(f)); JAX "
                     f"{run.jax.get('version', '(not run)')}: jit(grad(f)), "
                     "jit(grad(grad(f))), float64, each library in its own process. "
                     "Seconds per call: median of "
                     f"{SCALAR_ROUNDS} measurements of many calls (min in brackets); "
                     "previous = fesens 3a7c846, before the scalar fast paths. In turn: "
                     "the second derivatives of both libraries timed alternately in the JAX "
                     f"process ({ALTERNATING_ROUNDS} rounds; the targets read these).", "",
                     scalar_table(run), ""]
    sections += ["## Targets", "",
                 *(f"- [{'PASS' if c.passed else 'MISS'}] {c.text}" for c in found)]
    for name, text in run.profile_texts.items():
        sections += ["", f"### Profile: {name}", "", "```", text, "```"]
    return "\n".join(sections)


# --------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: sizes {' '.join(QUICK_SIZES)}, workload 3 up to "
                             f"n = {max(QUICK_W3_SIZES)}, {QUICK_FEM_BUDGET:g} s per size")
    parser.add_argument("--sizes", nargs="+", type=GridSize.parse, metavar="NXxNY[xNZ]",
                        help=f"FEM grid sizes (default: {' '.join(SIZES)})")
    parser.add_argument("--parts", default="ABCDE",
                        help="which parts to run, e.g. 'A' or 'BCDE' (default: ABCDE)")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help=f"FEM timing rounds per size beyond the first {MIN_ROUNDS} "
                             f"(default {FEM_BUDGET:g}, --quick {QUICK_FEM_BUDGET:g})")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS/OpenMP threads of the measured processes (default: library "
                             "defaults); 1 is far less noisy on a loaded machine")
    parser.add_argument("--no-profiles", action="store_true",
                        help="do not profile the functions of missed targets")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.case:
        serve_case(CASES, json.loads(args.case))
        return 0
    sizes = args.sizes or [GridSize.parse(s) for s in (QUICK_SIZES if args.quick else SIZES)]
    if args.threads:
        set_child_threads(args.threads)
    run = Run(sizes=sizes, parts=args.parts.upper(),
               budget=args.budget or (QUICK_FEM_BUDGET if args.quick else FEM_BUDGET),
               w3_sizes=QUICK_W3_SIZES if args.quick else W3_SIZES,
               profiles=not args.no_profiles)
    start = time.perf_counter()
    measure(run)
    print(report(run))
    print(f"\ntotal benchmark wall time: {time.perf_counter() - start:.0f} s")
    return 0 if all(c.passed for c in checks(run)) else 1


if __name__ == "__main__":
    sys.exit(main())
