"""Helpers shared by the benchmark scripts (``bench_fem.py``, ``bench_ad.py``).

* the cantilever problems on structured grids (:class:`GridSize`, :func:`cantilever_model`,
  :func:`unit_element_matrix`);
* child processes: a script re-invokes itself with ``--case JSON``; the child prints one
  result line (:func:`run_case`, :func:`serve_case`), so peak memory is per case;
* comparisons with the peer codes in their own environment (``bench_*_peers.py``): their
  interpreter, options and case loop (:func:`peers_python`, :func:`peer_arguments`,
  :func:`run_peer_cases`);
* measuring: :func:`timed`, :func:`peak_rss_mb`, :func:`reset_peak_rss`;
* reporting: number formats, Markdown tables, the machine header.

The scripts import this module as ``_common`` (Python puts a script's folder on
``sys.path``).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

RESULT_PREFIX = "BENCH-RESULT "
#: Thread counts of numpy's, scipy's and CHOLMOD's BLAS and of OpenMP code (pyamg);
#: OMP_THREAD_LIMIT also caps the num_threads(4) loops of SuiteSparse 5's CHOLMOD, which
#: ignore OMP_NUM_THREADS (fesens.openmp).
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                    "OMP_THREAD_LIMIT")


# --------------------------------------------------------------------------- problems
@dataclass(frozen=True)
class GridSize:
    """A structured grid: ``(nx, ny)`` quad4 in 2D or ``(nx, ny, nz)`` hex8 in 3D."""

    cells: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> GridSize:
        """Parse ``"400x200"`` or ``"48x24x24"``."""
        try:
            cells = tuple(int(n) for n in text.lower().split("x"))
        except ValueError:
            cells = ()
        if len(cells) not in (2, 3) or min(cells) < 1:
            raise argparse.ArgumentTypeError(f"size must look like 400x200 or 48x24x24: {text!r}")
        return cls(cells)

    @property
    def dim(self) -> int:
        return len(self.cells)

    @property
    def label(self) -> str:
        return "x".join(map(str, self.cells))

    @property
    def n_cells(self) -> int:
        return int(np.prod(self.cells))


def cantilever_model(size: GridSize, load: str = "traction"):
    """The cantilever model on a grid of square (cube) cells of size 1 / ny.

    Parameters
    ----------
    size : GridSize
    load : {"traction", "corner"}
        A unit downward traction on the ``right`` side, or a unit downward point load
        named ``"P"`` at the bottom-right corner (at ``z = 0`` in 3D).

    Returns
    -------
    fesens.fem.Elasticity
        ``E = 1``, ``nu = 0.3``, plane stress in 2D, ``left`` side clamped.
    """
    from fesens.mesh import box, rectangle
    from fesens.physics import Elasticity

    nx, ny = size.cells[:2]
    lengths = (nx / ny, 1.0, *(n / ny for n in size.cells[2:]))
    if size.dim == 2:
        model = Elasticity(rectangle(nx, ny, *lengths, cell_type="quad4"), plane="stress")
    else:
        model = Elasticity(box(*size.cells, *lengths, cell_type="hex8"))
    model.fix("left")
    down = (0.0, -1.0, 0.0)[: size.dim]
    if load == "traction":
        model.traction("right", down)
    elif load == "corner":
        model.point_load((lengths[0], *[0.0] * (size.dim - 1)), down, name="P")
    else:
        raise ValueError(f"load must be 'traction' or 'corner', got {load!r}")
    return model


def unit_element_matrix(model) -> np.ndarray:
    """``KE = Σ_k c_k K⁽ᵏ⁾`` at unit scale; requires one shared matrix per component."""
    matrices = model.cell_matrices()
    if any(Kk.shape[0] != 1 for Kk in matrices):
        raise ValueError("needs one shared element matrix per component (structured grid)")
    coefficients = model.coefficients()
    return sum(c[0] * Kk[0] for c, Kk in zip(coefficients, matrices, strict=True))


# --------------------------------------------------------------------------- child processes
def serve_case(cases: dict[str, Callable[..., dict[str, Any]]], spec: dict[str, Any]) -> None:
    """Entry point of a child process: run one case, print its result as JSON."""
    result = cases[spec["case"]](*spec["args"])
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def set_child_threads(threads: int) -> None:
    """Give the case processes started from now on ``threads`` BLAS/OpenMP threads (they
    inherit the environment; :func:`machine_lines` shows it)."""
    os.environ.update(dict.fromkeys(THREAD_VARIABLES, str(threads)))


def run_case(script: str | Path, case: str, *args: Any, timeout: float) -> dict[str, Any]:
    """Run one case of ``script`` in a fresh Python process; its result or an error entry."""
    spec = json.dumps({"case": case, "args": list(args)})
    return child_result([sys.executable, str(Path(script).resolve()), "--case", spec], timeout)


def child_result(command: Sequence[str], timeout: float) -> dict[str, Any]:
    """Run ``command`` (a case process that prints one :data:`RESULT_PREFIX` line); its
    result, or an ``error`` entry naming what went wrong."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", "timed_out": True}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX) :])
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": f"exit status {done.returncode}: {tail}"}


# --------------------------------------------------------------------------- peer comparisons
def peers_python() -> Path:
    """The interpreter of the peers' environment: ``$FESENS_PEERS_PYTHON`` or the one
    ``make peers`` creates (``.peers/bin/python`` at the repository root)."""
    configured = os.environ.get("FESENS_PEERS_PYTHON")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parent.parent / ".peers" / "bin" / "python"


def run_peer(script: Path, size: str, repeats: int, check: bool, timeout: float
             ) -> dict[str, Any]:
    """Run one peer's case ``script`` (in ``peers/``) in a fresh process of the peers'
    interpreter; its result or an ``error`` entry naming what went wrong."""
    python = peers_python()
    if not python.exists():
        return {"error": f"no peers' interpreter at {python}: run `make peers` or set "
                         "FESENS_PEERS_PYTHON"}
    spec = json.dumps({"size": size, "repeats": repeats, "check": check})
    return child_result([str(python), str(script), "--case", spec], timeout)


def peer_arguments(doc: str, sizes: Sequence[str], codes: Sequence[str], skipped: str
                   ) -> argparse.ArgumentParser:
    """The options of a comparison with the peers (``bench_*_peers.py``): ``--sizes``,
    ``--codes``, ``--repeats``, ``--threads``, ``--check``, ``--time-limit``, ``--json``,
    ``--run-all`` (help: which cases it adds, ``skipped``) and the hidden ``--case``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=list(sizes), metavar="NXxNYxNZ")
    parser.add_argument("--codes", nargs="+", default=list(codes), choices=codes)
    parser.add_argument("--repeats", type=int, default=1,
                        help="warm calls per timed quantity (median; default 1)")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS/OpenMP/XLA threads of the case processes (default 1)")
    parser.add_argument("--check", choices=("first", "all", "none"), default="first",
                        help="central-difference check of the gradient at the first size "
                             "(default), at every size or at none")
    parser.add_argument("--time-limit", type=float, default=1800.0,
                        help="seconds a case may run before it is killed")
    parser.add_argument("--json", type=Path, help="also write every case's result here")
    parser.add_argument("--run-all", action="store_true",
                        help=f"also run the cases of SKIPPED ({skipped})")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    return parser


def set_peer_threads(threads: int) -> None:
    """Give the case processes started from now on, fesens's and the peers', ``threads``
    threads: BLAS and OpenMP (:func:`set_child_threads`) and XLA's."""
    set_child_threads(threads)
    # XLA's CPU thread pool ignores the BLAS variables; torch reads OMP_NUM_THREADS.
    os.environ["XLA_FLAGS"] = (f"--xla_cpu_multi_thread_eigen={str(threads > 1).lower()} "
                               f"intra_op_parallelism_threads={threads}")


def run_peer_cases(script: str | Path, args: argparse.Namespace, peer_scripts: dict[str, Path],
                   skipped: dict[tuple[str, str], str], progress: Callable[[dict[str, Any]], str]
                   ) -> tuple[dict[tuple[str, str], dict[str, Any]], list[tuple[float, ...]]]:
    """Run every (code, size) case of ``args`` (:func:`peer_arguments`), each in a fresh
    process (threads as :func:`set_peer_threads` set them): a code of ``peer_scripts`` by
    :func:`run_peer`, any other as a case of ``script`` by :func:`run_case`; a case of
    ``skipped`` gets its reason unless ``--run-all``. ``progress(result)`` is printed to
    stderr after each case.

    Returns the results by ``(code, size)`` and the load averages at start and end."""
    loads = [load_average()]
    results = {}
    for index, size in enumerate(args.sizes):
        check = args.check == "all" or (args.check == "first" and index == 0)
        for code in args.codes:
            if (code, size) in skipped and not args.run_all:
                results[code, size] = {"skipped": skipped[code, size]}
            elif code in peer_scripts:
                results[code, size] = run_peer(peer_scripts[code], size, args.repeats, check,
                                               args.time_limit)
            else:
                results[code, size] = run_case(script, code, size, args.repeats, check,
                                               timeout=args.time_limit)
            print(f"  {code} {size}: {progress(results[code, size])}", file=sys.stderr,
                  flush=True)
    loads.append(load_average())
    return results, loads


def measure_fesens(measure: Callable[..., dict[str, Any]], make: Callable[[Any, str], Any],
                   solver: str, size: str, repeats: int, check: bool
                   ) -> tuple[dict[str, Any], Any]:
    """fesens's case of a comparison with the peers, in this (case) process, measured by the
    peers' harness's ``measure`` as theirs are: ``make(problem, solver)`` builds fesens's
    model, which has ``forward`` and ``value_and_grad``.

    Returns the result (code ``fesens``, or ``fesens-<solver>`` for a backend other than
    ``auto``) and the last model built, for what a script adds to the result."""
    models = []

    def build(problem: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
        models.append(make(problem, solver))
        return models[-1].forward, models[-1].value_and_grad

    versions = {name: version(name) for name in ("fesens", "scipy", "scikit-sparse")}
    result = measure("fesens" if solver == "auto" else f"fesens-{solver}", versions, build,
                     {"size": size, "repeats": repeats, "check": check})
    return result, models[-1]


def write_results(path: Path | None, results: dict[tuple[str, str], dict[str, Any]]) -> None:
    """With a ``path`` (``--json``), write every case's result there, one list entry each."""
    if path:
        path.write_text(json.dumps([{"code": code, "size": size, **result}
                                    for (code, size), result in results.items()]))


def unmeasured(result: dict[str, Any]) -> str:
    """Why a case has no measurements: its skip reason or its error."""
    return result.get("skipped") or f"failed: {result.get('error')}"


def case_progress(result: dict[str, Any], key: str, symbol: str) -> str:
    """One line on a finished case of a comparison with the peers, so that a long run shows
    what it has measured so far: its warm times, peak and objective ``result[key]``, printed
    as ``symbol``."""
    if key not in result:
        return unmeasured(result)
    return (f"forward {seconds(result['forward_s'])}, value+grad {seconds(result['gradient_s'])}"
            f", peak {megabytes(result['process_peak_mb'])} MB, {symbol} = {result[key]:.12e}")


def comparison_tables(results: dict[tuple[str, str], dict[str, Any]], sizes: Sequence[str],
                      codes: Sequence[str], key: str,
                      timing: tuple[Sequence[str], Callable[[str, dict], list[str]]],
                      agreement: tuple[Sequence[str], Callable[[str, dict, dict], list[str]]]
                      ) -> tuple[str, str]:
    """The times-and-memory table and the agreement table of a comparison with the peers.

    A row per (size, code); a case without its objective ``key`` (skipped or failed) shows
    why. ``timing`` is the headers after ``code, size, dofs, set-up, 1st forward`` and
    ``cells(code, result)``, its cells there; ``agreement`` the headers between
    ``code, size`` and ``FD check, versions`` and ``cells(code, result, reference)``,
    ``reference`` the first code's result measured at that size.
    """
    (timing_headers, timing_cells), (agreement_headers, agreement_cells) = timing, agreement
    timing_rows, agreement_rows = [], []
    for size in sizes:
        reference = next((results[code, size] for code in codes
                          if key in results[code, size]), None)
        for code in codes:
            r = results[code, size]
            if key not in r:
                reason = unmeasured(r)
                timing_rows.append([code, size, str(hex8_dofs(size)), reason,
                                    *[""] * len(timing_headers), ""])
                agreement_rows.append([code, size, reason,
                                       *[""] * (len(agreement_headers) + 1)])
                continue
            timing_rows.append([code, size, str(hex8_dofs(size)), seconds(r["setup_s"]),
                                seconds(r["forward_cold_s"]), *timing_cells(code, r)])
            agreement_rows.append([
                code, size, *agreement_cells(code, r, reference),
                f"{r['fd_rel_error']:.1e}" if "fd_rel_error" in r else "-",
                ", ".join(f"{k} {v}" for k, v in r["versions"].items())])
    return (table(["code", "size", "dofs", "set-up", "1st forward", *timing_headers],
                  timing_rows),
            table(["code", "size", *agreement_headers, "FD check", "versions"], agreement_rows))


def relative_difference(a: Any, b: Any) -> float:
    """``‖a − b‖ / ‖b‖`` of two numbers or vectors."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def hex8_dofs(size: str) -> int:
    """The dofs of a 3-component field on an ``"NXxNYxNZ"`` hex8 grid."""
    nx, ny, nz = (int(n) for n in size.split("x"))
    return 3 * (nx + 1) * (ny + 1) * (nz + 1)


# --------------------------------------------------------------------------- measuring
def size_arguments(doc: str, default_sizes: Sequence[str], repeats: int
                   ) -> argparse.ArgumentParser:
    """The options of a benchmark run per grid size in case processes: ``--sizes``,
    ``--repeats`` (timed calls per quantity), ``--threads`` (of the case processes) and the
    hidden ``--case`` of a child."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--sizes", nargs="+", default=list(default_sizes))
    parser.add_argument("--repeats", type=int, default=repeats, help="timed calls per quantity")
    parser.add_argument("--threads", type=int, default=1,
                        help="BLAS/OpenMP threads of the case processes (default 1)")
    parser.add_argument("--case", help=argparse.SUPPRESS)
    return parser


def run_sizes(script: str | Path, case: str, title: str, args: argparse.Namespace,
              packages: Sequence[str] = ("numpy", "scipy", "scikit-sparse")
              ) -> tuple[dict[str, dict[str, Any]], float]:
    """Print the header (``title``, machine lines), run ``case`` of ``script`` once per size
    of ``args.sizes`` (``args.repeats`` passed on) in its own process, print the load line.

    Returns the results by size and the start time (``time.perf_counter``)."""
    set_child_threads(args.threads)
    start, loads = time.perf_counter(), [load_average()]
    print(f"# {title}\n")
    print("\n".join(machine_lines(packages)))
    results = {}
    for label in args.sizes:
        results[label] = run_case(script, case, label, args.repeats, timeout=1800)
        print(f"  {label}: done", file=sys.stderr, flush=True)
    loads.append(load_average())
    print(load_line(loads) + "\n")
    return results, start


def median_time(fn: Callable[[int], Any], repeats: int) -> float:
    """Median wall time of ``fn(i)`` for ``i = 1..repeats`` after the warm-up ``fn(0)``."""
    fn(0)
    times = []
    for i in range(1, repeats + 1):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def peak_rss_mb() -> float:
    """High-water mark of this process's resident memory, in MiB (Linux: KiB units)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def resident_mb() -> float:
    """This process's current resident memory, in MiB (Linux ``/proc/self/statm``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def release_free_memory() -> None:
    """Collect garbage and hand the allocator's free heap pages back to the OS (glibc
    ``malloc_trim``), so that the resident size counts live data only."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def reset_peak_rss() -> bool:
    """Reset the high-water mark to the current resident size (Linux >= 4.0).

    After this, :func:`peak_rss_mb` reports the peak of what runs next only (plus what is
    resident now). Returns False where the kernel does not support it.
    """
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def timed_warm(fn: Callable[[], Any], repeats: int) -> tuple[float, float, float, Any]:
    """Median wall time of ``repeats`` calls, the peak RSS (MiB) above the resident size
    before them, the absolute peak RSS (MiB) during them, and the last value."""
    release_free_memory()
    before = resident_mb()
    reset_peak_rss()
    times, value = [], None
    for _ in range(max(repeats, 1)):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), peak_rss_mb() - before, peak_rss_mb(), value


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall time of one call of ``fn`` and its return value."""
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


# --------------------------------------------------------------------------- reporting
def seconds(value: float | None) -> str:
    """``0.0123`` -> ``"12.3 ms"``; ``2.5`` -> ``"2.50 s"``."""
    if value is None:
        return "-"
    if value < 1.0:
        return f"{value * 1e3:.3g} ms"
    return f"{value:.3g} s"


def ratio(numerator: float | None, denominator: float | None) -> str:
    if numerator is None or not denominator:
        return "-"
    return f"{numerator / denominator:.3g}"


def megabytes(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown pipe table with padded columns (readable as plain text too)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).rjust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (or the platform's processor string)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def record(text: str, append: bool) -> None:
    """Print a script's report; with ``append``, also append it to benchmarks/RESULTS.md
    (paths inside the repository written relative to its root, so the record reads the
    same from any checkout)."""
    print(text)
    if append:
        root = Path(__file__).resolve().parents[1]
        with open(root / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as results:
            results.write("\n" + text.replace(str(root) + "/", "") + "\n")


def load_average() -> tuple[float, ...]:
    """The 1, 5 and 15 minute load averages (empty where unsupported)."""
    return os.getloadavg() if hasattr(os, "getloadavg") else ()


def load_line(samples: Sequence[tuple[float, ...]]) -> str:
    """Load averages at start and end, with a warning if other work competed for the CPU."""
    shown = " / ".join(", ".join(f"{x:.1f}" for x in values) for values in samples)
    cores = os.cpu_count() or 1
    busy = any(values and values[0] > cores + 0.5 for values in samples)
    warning = f"  WARNING: load above {cores} cores, times are inflated" if busy else ""
    return f"load average (1, 5, 15 min) at start / end: {shown}{warning}"


def machine_lines(packages: Sequence[str]) -> list[str]:
    """Date, CPU, library versions, CHOLMOD's BLAS and thread settings, one per line."""
    from fesens.sysinfo import blas_description, thread_lines

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    versions = ", ".join(f"{name} {package_version(name)}" for name in packages)
    threads = {k: v for k, v in os.environ.items()
               if k.endswith("_NUM_THREADS") or k == "OMP_THREAD_LIMIT"}
    return [
        f"date: {datetime.now(UTC):%Y-%m-%d %H:%M UTC}",
        f"machine: {cpu_model()}, {os.cpu_count()} cores ({usable} usable), "
        f"{platform.system()} {platform.machine()}",
        f"python {platform.python_version()}; {versions}",
        f"CHOLMOD BLAS: {blas_description()}",
        f"thread settings: {threads or 'library defaults'}",
        *thread_lines(),
    ]
