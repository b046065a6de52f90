"""The gradient of ``f(x) = ‖A(x)⁻¹ b‖`` by reverse-mode AD, against finite differences.

``A(x)`` is the 5-point Laplacian (plus the identity) of a near-square grid of ``n`` nodes
whose values depend on ``x`` (one variable per node) on a fixed sparsity pattern:
``A_ij(x) = A0_ij (1 + ½ sin x_i sin x_j)`` — symmetric and positive definite for ``x`` in
``[0.5, 1.5]``. In fesens it is ``sparse_matrix(pattern, data(x))``, and ``solve`` is
differentiable: the backward pass is one adjoint solve with the forward factorization
(CHOLMOD when installed) and a gather on the pattern, so the whole gradient costs about one
more solve. A finite-difference gradient needs ``n + 1`` forward solves. The script times
the forward ``f(x)``, ``value_and_grad(f)(x)`` and the finite-difference gradient (measured
for small ``n``, else extrapolated as ``(n + 1)`` forward solves), for n = 200 … 10⁵, and
checks the gradient against a central difference along a random direction ``v``:
``∇f·v ≈ (f(x + hv) − f(x − hv)) / 2h``.

Run: ``python examples/sparse_solve_gradient.py [--fast] [--out DIR]`` (``--fast``: n up
to 10⁴). Prints the table; writes ``timings.png`` and ``timings.csv`` to ``--out``
(default ``results/examples/sparse_solve_gradient``).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from fesens.ad import SparsePattern, solve, sparse_matrix, value_and_grad
from fesens.plotting import new_figure, save_figure

SIZES = (200, 1000, 10_000, 100_000)
FAST_SIZES = (200, 1000, 10_000)
#: Finite-difference gradients are measured up to this n, extrapolated above.
FD_MEASURED_MAX_N = 1000
REPEATS = 5


class SolveNorm:
    """``f(x) = ‖A(x)⁻¹ b‖`` on the 5-point Laplacian pattern of ``n`` grid nodes."""

    def __init__(self, n: int, seed: int = 0):
        rows = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
        self.grid = (rows, n // rows)
        A0 = sp.kronsum(_path_laplacian(n // rows), _path_laplacian(rows), format="csr")
        A0 = sp.csr_matrix(A0 + sp.identity(n))
        A0.sum_duplicates()
        self.pattern = SparsePattern.of(A0)
        self.base = A0.data.copy()
        self.b = np.random.default_rng(seed).standard_normal(n)

    def __call__(self, x):
        p = self.pattern
        data = self.base * (1.0 + 0.5 * np.sin(x[p.rows]) * np.sin(x[p.cols]))
        return np.linalg.norm(solve(sparse_matrix(p, data), self.b))


def _path_laplacian(m: int) -> sp.csr_matrix:
    return sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m), format="csr")


def fastest(call, x: np.ndarray, repeats: int = REPEATS) -> float:
    """Least wall time of ``call(x')`` over ``repeats`` calls, each at a slightly different
    ``x'`` (a solve at unchanged values would reuse the previous factorization)."""
    times = []
    for k in range(1, repeats + 1):
        shifted = x * (1.0 + k * 1e-9)
        start = time.perf_counter()
        call(shifted)
        times.append(time.perf_counter() - start)
    return min(times)


def finite_difference_gradient(f, x: np.ndarray, step: float = 1e-7) -> np.ndarray:
    """One-sided differences: ``n + 1`` evaluations of ``f``."""
    f0 = f(x)
    gradient = np.empty_like(x)
    for i in range(x.size):
        shifted = x.copy()
        shifted[i] += step
        gradient[i] = (f(shifted) - f0) / step
    return gradient


def measure(n: int, seed: int = 0) -> dict:
    """Timings and gradient checks for one ``n``."""
    f = SolveNorm(n, seed)
    rng = np.random.default_rng(seed + 1)
    x = rng.uniform(0.5, 1.5, n)
    value, gradient = value_and_grad(f)(x)
    forward = fastest(f, x)
    ad = fastest(value_and_grad(f), x)
    direction = rng.standard_normal(n)
    h = 1e-5
    central = (f(x + h * direction) - f(x - h * direction)) / (2 * h)
    row = dict(n=n, grid=f.grid, nnz=f.pattern.nnz, value=float(value),
               forward_seconds=forward, ad_seconds=ad,
               fd_seconds=(n + 1) * forward, fd_measured=False,
               directional_ad=float(gradient @ direction), directional_fd=float(central))
    row["directional_error"] = abs(row["directional_ad"] - central) / abs(central)
    if n <= FD_MEASURED_MAX_N:
        start = time.perf_counter()
        fd = finite_difference_gradient(f, x)
        row.update(fd_seconds=time.perf_counter() - start, fd_measured=True,
                   fd_error=float(np.abs(fd - gradient).max() / np.abs(gradient).max()))
    return row


def run(out: str | Path | None = None, *, fast: bool = False) -> list[dict]:
    """One :func:`measure` row per size; writes ``timings.png`` and ``.csv`` to ``out``."""
    rows = [measure(n) for n in (FAST_SIZES if fast else SIZES)]
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        write_csv(rows, out / "timings.csv")
        plot_timings(rows, out / "timings.png")
    return rows


def write_csv(rows: list[dict], path: Path) -> Path:
    keys = ["n", "nnz", "forward_seconds", "ad_seconds", "fd_seconds", "fd_measured",
            "directional_error"]
    lines = [",".join(keys)] + [",".join(str(row[k]) for k in keys) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def plot_timings(rows: list[dict], path: Path) -> Path:
    n = np.array([row["n"] for row in rows])
    fig = new_figure(figsize=(6.4, 4.2))
    ax = fig.subplots()
    ax.loglog(n, [row["forward_seconds"] for row in rows], "o-", label="forward f(x)")
    ax.loglog(n, [row["ad_seconds"] for row in rows], "s-", label="value_and_grad (AD)")
    fd = np.array([row["fd_seconds"] for row in rows])
    measured = np.array([row["fd_measured"] for row in rows])
    ax.loglog(n, fd, "k--", linewidth=1)
    ax.loglog(n[measured], fd[measured], "k^", label="FD gradient, measured")
    ax.loglog(n[~measured], fd[~measured], "k^", markerfacecolor="none",
              label="FD gradient, (n+1) x forward")
    ax.set_xlabel("n (unknowns = design variables)")
    ax.set_ylabel("wall time [s]")
    ax.set_title("gradient of ‖A(x)⁻¹ b‖: AD vs finite differences")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return save_figure(fig, path)


def table(rows: list[dict]) -> str:
    header = (f"{'n':>7s} {'nnz(A)':>8s} {'forward':>9s} {'AD grad':>9s} {'AD/fwd':>7s} "
              f"{'FD grad':>12s} {'FD/AD':>9s} {'dir. rel. err':>13s}")
    lines = [header]
    for row in rows:
        fd = f"{row['fd_seconds']:.3g} s" + ("" if row["fd_measured"] else "*")
        lines.append(
            f"{row['n']:7d} {row['nnz']:8d} {row['forward_seconds'] * 1e3:7.2f}ms "
            f"{row['ad_seconds'] * 1e3:7.2f}ms {row['ad_seconds'] / row['forward_seconds']:7.2f} "
            f"{fd:>12s} {row['fd_seconds'] / row['ad_seconds']:9.3g} "
            f"{row['directional_error']:13.1e}")
    return "\n".join(lines) + "\n* extrapolated: (n + 1) x forward"


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/examples/sparse_solve_gradient"))
    parser.add_argument("--fast", action="store_true",
                        default=bool(os.environ.get("FESENS_EXAMPLES_FAST")),
                        help="n up to 10^4 only (also FESENS_EXAMPLES_FAST=1)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = run(args.out, fast=args.fast)
    print(table(rows))
    for row in rows:
        if row["fd_measured"]:
            print(f"n = {row['n']}: full FD gradient vs AD, max relative difference "
                  f"{row['fd_error']:.1e} (one-sided differences, step 1e-7)")
    print(f"wrote {args.out / 'timings.png'}, {args.out / 'timings.csv'} "
          f"({time.perf_counter() - start:.1f} s)")
    return rows


if __name__ == "__main__":
    main()
