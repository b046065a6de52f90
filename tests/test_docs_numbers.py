"""Every number README.md and the guides (fesens/docs/*.md) quote is tied to what produces
it, and is reproduced.

``QUOTES`` lists each quoted number: the document, the quoted text (a regex whose groups
capture the numbers; a space matches any run of white space, so line wrapping does not
matter), the source that produces them (an example's full run, a command, or a benchmark's
recorded output in benchmarks/RESULTS.md, which its script wrote: measured times and memory
are compared with that record, not rerun) and a regex whose groups capture the same numbers,
in the same order, from the source's output. A quoted number must agree with the produced
one to the digits both print (half a unit of the last digit of each) plus ``rel`` of the
produced value; ``rel`` is non-zero only for long optimizations whose last digits move with the BLAS
and the thread count, and says by how much they may. Where a count itself moves (the
iteration at which a stopping rule first holds), the text quotes a range the produced value
must lie in.

Fast sources run in the test suite; the full runs of the examples (a few minutes in all)
run under ``FESENS_DOCS_CHECK=1`` (``make docs-check``, which CI runs).

``test_every_quoted_number_is_checked`` keeps a new number from slipping in unchecked: every
number of the prose (two digits or more, or with a decimal point) must lie inside a quote
of ``QUOTES``, a ```text transcript that ``test_transcript_reproduces`` reruns, or an entry
of ``ALLOWED`` (numbers that are not results: sizes and settings the text states, exit
codes, years of citations). Code blocks and inline code are inputs the reader types (the
shell and Python blocks run and the TOML blocks are validated by tests/test_readme.py), not
quoted results."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ["README.md", *sorted(f"fesens/docs/{path.name}"
                                  for path in (ROOT / "fesens" / "docs").glob("*.md"))]
FULL_RUNS = os.environ.get("FESENS_DOCS_CHECK") == "1"
RUN_TIMEOUT = 900.0                     # seconds for one full example run


@dataclass(frozen=True)
class Source:
    """What prints the numbers: ``argv`` run in a temporary folder (``{out}`` replaced by
    a folder in it), or ``record``, a file of the repository holding a script's output
    (its last match counts: records are appended in time order)."""

    name: str
    argv: tuple[str, ...] = ()
    record: str = ""
    fast: bool = False
    timeout: float = RUN_TIMEOUT


def example(name: str, *, out: bool = True) -> Source:
    """The full run of ``examples/NAME.py`` (``--out`` into the temporary folder)."""
    argv = (sys.executable, str(ROOT / "examples" / f"{name}.py"))
    return Source(name, argv + (("--out", "{out}") if out else ()))


MBB = Source("mbb preset", (str(Path(sys.executable).parent / "fesens"), "optimize",
                            "--preset", "mbb", "--out", "{out}", "--force"), fast=True)
RESULTS = Source("benchmarks/RESULTS.md", record="benchmarks/RESULTS.md", fast=True)
EXAMPLES = {name: example(name) for name in (
    "cantilever_compliance", "lbracket_stress", "heatsink", "convective_heatsink",
    "truss_ground_structure", "load_cases_minmax", "frequency_topology", "buckling_column",
    "neural_topology", "shape_fillet", "plate_hole_stress", "thermal_bracket",
    "inverse_identification", "bracket_study", "nonlinear_cantilever")}
EXAMPLES.update((name, example(name)) for name in (
    "mechanism_inverter", "robust_length_scale", "overhang_printing", "pulsed_heatsink",
    "dynamic_compliance", "design_stl", "stress_constrained_bracket", "multimaterial_beam"))
EXAMPLES["euler_column"] = example("euler_column", out=False)
EXAMPLES["newton_identification"] = example("newton_identification", out=False)

NUMBER = r"(?<![\d.])([-−]?[\d,]*\d(?:\.\d+)?(?:e[-+]?\d+)?)(?!\d|\.\d)"  # a whole number
N = NUMBER


@dataclass(frozen=True)
class Quote:
    document: str
    text: str                           # regex of the quoted text; groups: the numbers
    source: Source
    output: str                         # regex of the source's output; groups: the same
    rel: float = 0.0                    # allowed relative drift beyond the printed digits
    factor: float = 0.0                 # or: the produced value may be at most this factor
    #                                     above the quoted one, and any amount below (an
    #                                     error at round-off level: smaller is no worse)
    order: tuple[int, ...] = ()         # output group of each text group (default: same);
    #                                     two text groups in a row on one output group are a
    #                                     range "LOW to HIGH" the produced value lies in

    @property
    def id(self) -> str:
        text = self.text.replace(NUMBER, "N").replace("\\", "")
        return f"{self.document.rsplit('/', 1)[-1]}: {text[:50]}"


README, EXAMPLES_MD = "README.md", "fesens/docs/examples.md"
SOLVERS, MPI, BENCH = "fesens/docs/solvers.md", "fesens/docs/mpi.md", "fesens/docs/benchmarks.md"
E = EXAMPLES


#: A row of bench_stress_bracket.py's table of a rerun from a moved start: its iteration
#: count and thresholded peak.
PERTURBED_ROW = (rf"\| +preset, start moved by 1e-12 \(seed {{seed}}\) \|[^|]*\| +{N} "
                 rf"\(converged\) \|[^|]*\|[^|]*\| +{N} MPa = ")


def preset3d_quote(preset: str, cells: str, iterations: str = N) -> Quote:
    """A row of the 3D preset table in topology.md, from bench_3d_presets.py's table: cell
    count, iterations (``iterations``: the pattern of the record's, "(10)" for the large
    runs of the record's main run, not a later run's single iteration), time, peak memory
    and final objective."""
    status = r"\((?:converged|max_iter)\)"
    return Quote("fesens/docs/topology.md",
                 rf"\| {preset} \| {cells} \({N}\) \| {N} {status} \| {N} s \| {N} MB "
                 rf"\| {N} \|", RESULTS,
                 rf"\|\s*{preset} \|\s*{cells} \({N}\) \|\s*{iterations} {status} \|\s*{N} s "
                 rf"\|\s*[\d.]+ s \|\s*{N} MB \|\s*{N} \|")


def scale_row(grid: str, solver: str, unit: str) -> str:
    """A row of bench_scale.py's table: its cells, iteration time and peak MB."""
    return (rf"\|\s*{grid} \|\s*([\d,]+) \|\s*[\d,]+ \|\s*{solver} \|\s*([\d.]+) {unit} \|"
            r"[^\n]*\|\s*(\d+) \|\n")


QUOTES = [
    Quote(README, rf"compliance {N} after {N} iterations", MBB,   # the last iteration's line
          rf"\n +\d+ +objective +{N} .*\nconverged after {N} iterations"),
    # the examples' full runs
    Quote(EXAMPLES_MD, rf"Compliance {N} after {N} iterations \(uniform design {N}, full "
          rf"solid {N}\)", E["cantilever_compliance"], rf"converged after {N} iterations: "
          rf"compliance {N} \(uniform design {N}, full solid {N}\)", order=(1, 0, 2, 3)),
    Quote(EXAMPLES_MD, rf"from {N} to {N} MPa for {N} % more compliance", E["lbracket_stress"],
          rf"\ncompliance only(?: +[\d.]+){{3}} +{N} .*\np-norm ≤ \d+ MPa(?: +[\d.]+){{3}} +{N} "
          rf"(?:.*\n)*.*for \+{N} % compliance"),
    Quote(EXAMPLES_MD, rf"compliance reduced {N}x with 40", E["heatsink"],
          rf"thermal compliance reduced x{N}"),
    Quote(EXAMPLES_MD, rf"compliance reduced {N}x with 35 % aluminium, the chip at {N} °C "
          rf"\(all aluminium: {N} °C\)", E["convective_heatsink"],
          rf"\noptimized design +[\d.]+ +{N}\nall aluminium \(bound\) +[\d.]+ +{N}\n"
          rf"thermal compliance reduced x{N}", order=(2, 0, 1)),
    Quote(EXAMPLES_MD, rf"{N} of {N} candidate bars", E["truss_ground_structure"],
          rf"{N} of {N} bars active"),
    Quote(EXAMPLES_MD, rf"weighted sum gives compliances {N} and {N}; the worst case "
          rf"\(`MinMaxProblem`\) gives {N} for both", E["load_cases_minmax"],
          rf"\nweighted +{N} +{N} .*\nminmax +{N} "),
    Quote(EXAMPLES_MD, rf"design's f·u is {N}, the linear design's {N} \({N} % more\); {N} % "
          rf"of the cells", E["nonlinear_cantilever"], rf"nonlinear design {N}, linear design "
          rf"{N} \(\+{N} %\)\ncells solid in one design and void in the other: {N} %",
          rel=0.005),
    # the iteration count at which the change first falls below the tolerance moves with
    # the last bits (205-312 over starts moved by 1e-12 and other BLAS kernels), f1 by 0.4 %
    Quote(EXAMPLES_MD, rf"f1 {N} → {N}, converged after {N} to {N} iterations",
          E["frequency_topology"],
          rf"\nconverged after {N} iterations: first frequency before {N}, after {N}",
          rel=0.01, order=(1, 2, 0, 0)),
    # still moving at its 120 iterations: 0.0199-0.0207 over perturbed starts and kernels
    Quote(EXAMPLES_MD, rf"load factor {N} → {N} in {N} iterations", E["buckling_column"],
          rf"stopped after {N} iterations: lowest load factor before {N}, after {N}",
          rel=0.04, order=(1, 2, 0)),
    Quote(EXAMPLES_MD, rf"compliance {N}, nearly black and white, where OC with a density "
          rf"filter reaches {N}", E["neural_topology"], rf"\nneural +{N} .*\noc +{N} ",
          rel=0.01),
    Quote(EXAMPLES_MD, rf"concentration factor drops from {N} to {N}\.", E["shape_fillet"],
          rf"\n +initial .*\(K_t = {N}\).*\n +optimized .*\(K_t = {N}\)"),
    Quote(EXAMPLES_MD, rf"concentration at the hole is {N}", E["plate_hole_stress"],
          rf"at the top of the hole: {N}"),
    Quote(EXAMPLES_MD, rf"Mises {N} MPa;", E["thermal_bracket"], rf"peak von Mises \(SPR\) {N}"),
    Quote(EXAMPLES_MD, rf"converge from {N} to {N} times Euler's load, quad8 cells give {N}",
          E["euler_column"], rf"2D quad4.*\n(?:.*\n)*? +40 x +2 +\d+ +{N} (?:.*\n)*? +320 x 16 +"
          rf"\d+ +{N} (?:.*\n)*?2D quad8.*\n(?:.*\n)*? +320 x 16 +\d+ +{N} "),
    Quote(EXAMPLES_MD, rf"load factors are {N} and {N} times the first",
          E["euler_column"], rf"2D quad8.*\n(?:.*\n)*? +320 x 16 +\d+ +[\d.]+ +{N} +{N}"),
    # L-BFGS-B on noisy data stops where the last bits take it: reruns gave a mean modulus
    # of 2.916 to 2.929 and an error of 9.7 to 9.8 %
    Quote(EXAMPLES_MD, rf"error {N} % \(start {N} %\), mean modulus in the inclusion {N}",
          E["inverse_identification"], rf"error of E: {N}% \(start {N}%\); mean E in the "
          rf"inclusion {N}", rel=0.01),
    Quote(EXAMPLES_MD, rf"{N} against about {N} iterations", E["newton_identification"],
          rf"trust-krylov \| +{N} \|(?:.*\n)*? +L-BFGS-B \| +{N} \|", rel=0.1),
    Quote(EXAMPLES_MD, rf"the same field to {N}", E["newton_identification"],
          rf"identified fields: relative L2 difference {N}", rel=0.5),
    Quote(EXAMPLES_MD, rf"to the load is {N} and to E {N}", E["bracket_study"],
          rf"S\(compliance, E\) = {N}\n(?:.*\n)*? +S\(compliance, P\) = \+{N}", order=(1, 0)),
    *(Quote("fesens/docs/topology.md", rf"\| {run} \| {N} \| {N} \| {N} \| {N} \|", RESULTS,
            rf"\|\s+{run}[^|]*\|\s+{N}\s+\|\s+{N}\s+\|\s+{N}\s+\|\s+{N}\s+\|")
      for run in (r"reference code \(numpy\)", "fesens OC", "fesens MMA")),
    *(preset3d_quote(preset, cells) for preset, cells in (
        ("cantilever3d", "30x10x10"), ("cantilever3d_top3d", "60x20x4"),
        ("heatsink3d", "20x20x20"), ("inverter3d", "24x12x4"), ("inverter3d_robust", "24x12x4"),
        ("overhang3d", "32x8x16"))),
    *(preset3d_quote(preset, cells, "(10)") for preset, cells in (
        ("cantilever3d", "120x40x40"), ("cantilever3d_top3d", "180x60x12"),
        ("heatsink3d", "50x50x50"), ("inverter3d", "120x60x20"),
        ("inverter3d_robust", "120x60x20"), ("overhang3d", "96x24x48"))),
    Quote("fesens/docs/topology.md", rf"fesens ends at C = {N} after {N} iterations, the "
          rf"reference at {N} after {N} \(relative {N}\); their compliance histories agree to "
          rf"1e-6 for {N} iterations, after which the two direct solvers' rounding grows in the "
          rf"design's late oscillation and {N} of the {N} final design variables differ by "
          rf"more than one half \(mean difference {N}", RESULTS,
          rf"\|\s*cantilever3d_top3d \|\s*60x20x4 \([\d,]+\) \|\s*{N} \(\w+\) \|[^|]*\|[^|]*"
          rf"\|[^|]*\|\s*{N} \|[^|]*\|[^|]*\|\s*top3d {N} after {N} \(\d+ s\): rel\. {N}; "
          rf"histories within 1e-6 up to iteration {N}; \|Δx\| mean {N}, max [\d.e+-]+, {N} of "
          rf"{N} cells > 0\.5", order=(1, 0, 2, 3, 4, 5, 7, 8, 6)),
    Quote("fesens/docs/topology.md", rf"on 210x70x70, {N} cells, the matrix-free multigrid\) "
          rf"two iterations needed {N} MB at most", RESULTS,
          rf"\|\s*cantilever3d \|\s*210x70x70 \({N}\) \|[^|]*\|[^|]*\|[^|]*\|\s*{N} MB"),
    Quote("fesens/docs/topology.md", rf"with another SuperLU ordering stops at iteration {N} "
          rf"with {N}\)", RESULTS, rf"top3d {N} after {N} \(\d+ s\): rel\. [\d.e+-]+, max",
          order=(1, 0)),
    Quote("fesens/docs/topology.md", rf"differs from the code's by {N} %", RESULTS,
          rf"\|\s+fesens MMA \({N} %\)"),
    Quote("fesens/docs/topology.md", rf"checkerboards a minimum-volume MBB beam \({N} windows",
          RESULTS, rf"\|\s+MBB 60x20 min volume, f·u ≤ 300\s+\|\s+sensitivity, constraint "
          rf"gradient exact\s+\|(?:[^|]*\|){{5}}\s+{N}\s+\|"),
    Quote(EXAMPLES_MD, rf"pushes right by {N} and the inverter's output moves by {N}, against "
          rf"it; the gripper's jaw moves by {N}, towards the symmetry line\. Thresholded at the "
          rf"volume fraction and solved again they move by {N} and {N}", E["mechanism_inverter"],
          rf"inverter: .*input u_x {N}, output port u_x {N}; thresholded design {N}\n"
          rf"gripper: .*jaw tip u_y {N}; thresholded design {N}", order=(0, 1, 3, 2, 4),
          rel=0.005),
    Quote("fesens/docs/topology.md", rf"the 2D inverter stops after {N} iterations with the "
          rf"worst \(eroded\) output displacement {N} \(the blueprint's {N}\), the 3D one "
          rf"after {N} with {N} \({N}\)", RESULTS,
          rf"\| +inverter_robust \| +robust \| +{N} \| +converged \| +{N} \| +{N} \|"
          rf"(?:.*\n)*?\| +inverter3d_robust \| +robust \| +{N} \| +converged \| +{N} \| +{N} \|",
          order=(0, 2, 1, 3, 5, 4)),
    Quote("fesens/docs/topology.md", rf"the 3D inverter with one projection has {N}\. Both "
          rf"robust blueprints hold less material than the limit allows, {N} and {N} of the "
          rf"domain for {N}", RESULTS,
          rf"\| +inverter_robust \| +robust \|[^\n]*\| +{N} \({N}\) \|(?:.*\n)*?"
          rf"\| +inverter3d_robust \| +robust \|[^\n]*\| +{N} \([\d.]+\) \|(?:.*\n)*?"
          rf"\| +inverter3d_robust \| +plain \|[^\n]*\| +{N} \| +[\d.]+ s \|",
          order=(3, 0, 2, 1)),
    Quote(EXAMPLES_MD, rf"plain blueprint \(compliance {N}\) has a smallest solid of {N} and "
          rf"a smallest void of {N} cells; the robust one \(compliance {N}, its eroded design "
          rf"{N}\) {N} and {N}, above the size of {N}", E["robust_length_scale"],
          rf"plain: blueprint compliance {N},.*smallest solid {N}, void {N}\nrobust: "
          rf"blueprint compliance {N} \(eroded {N},.*smallest solid {N}, void {N}\n"
          rf"prescribed by the radius and thresholds: solid {N}", rel=0.02),
    Quote(EXAMPLES_MD, rf"Without the filter {N} of {N} solid cells \({N} %\) overhang with "
          rf"nothing under them, compliance {N}; with it {N} of {N}, compliance {N}",
          E["overhang_printing"],
          rf"without the overhang filter: compliance {N},.*; {N} of {N} solid cells "
          rf"unsupported \({N} %\)\nwith the overhang filter: compliance {N},.*; {N} of {N} "
          rf"solid", order=(1, 2, 3, 0, 5, 6, 4), rel=0.02),
    Quote(EXAMPLES_MD, rf"The peak drops {N}x, from {N} \(uniform design\) to {N}",
          E["pulsed_heatsink"],
          rf"initial design: chip temperature peaks at {N} .*\noptimized design: chip "
          rf"temperature peaks at {N} .*\n.*the peak drops {N}x", order=(2, 0, 1), rel=0.005),
    Quote(EXAMPLES_MD, rf"drops {N}x, from {N} to {N}; the first eigenfrequency rises from {N} "
          rf"to {N}", E["dynamic_compliance"],
          rf"initial design: \|f · u\| {N} at 0.01 Hz; first eigenfrequency {N} Hz\n"
          rf"optimized design: \|f · u\| {N} at 0.01 Hz; first eigenfrequency {N} Hz\n"
          rf".*; {N}x lower", order=(4, 0, 2, 1, 3), rel=0.005),
    Quote(EXAMPLES_MD, rf"compliance {N}, {N} triangles, a closed surface enclosing {N} where "
          rf"the cells of density above 0\.5 fill {N} \(the surface passes through the level "
          rf"0\.5", E["design_stl"],
          rf"compliance {N} after .*\ndesign.stl: {N} triangles, closed, enclosing {N}; solid "
          rf"cells \(density > 0.5\) {N},", rel=0.02),
    # the stress stays on its limit while the members shift: the last digits move with
    # rounding (the preset's comment: volumes 0.3620 to 0.3627 over perturbed starts)
    Quote(EXAMPLES_MD, rf"volume fraction of {N} with a largest cell stress of {N} MPa",
          E["stress_constrained_bracket"],
          rf"final volume fraction {N}; max von Mises stress {N} MPa", rel=0.003),
    Quote(EXAMPLES_MD, rf"Two phases: compliance {N}, the light phase in {N} % of the cells "
          rf"and the heavy one in {N} %; the heavy phase alone {N}, the light phase alone {N}",
          E["multimaterial_beam"],
          rf"two phases: compliance {N}, .*light {N} % and heavy {N} %.*\nheavy alone: "
          rf"compliance {N},.*\nlight alone: compliance {N},", rel=0.005),
    # the grayness of a converged design moves with its last gray cells more than the
    # compliance does
    Quote(EXAMPLES_MD, rf"Their grayness, [^:]*: {N} %, {N} % and\s+{N} %\.",
          E["multimaterial_beam"], rf"two phases: .*grayness {N} %;.*\nheavy alone: "
          rf".*grayness {N} %;.*\nlight alone: .*grayness {N} %;", rel=0.02),
    # measured: the records the benchmark scripts wrote
    Quote("fesens/docs/topology.md", rf"quads, {N} in the L\)", RESULTS,
          rf"100x100 quad4, {N} in the L"),
    Quote("fesens/docs/topology.md", rf"with a {N} MPa limit, loaded", RESULTS,
          rf"σ_lim = {N} MPa; peaks of the solid cells"),
    Quote("fesens/docs/topology.md", rf"converged after {N} iterations, volume fraction {N} of "
          rf"the L, largest stress of the half-solid cells before thresholding {N} MPa, "
          rf"largest cell-centroid von Mises stress of the thresholded design {N} MPa, at "
          rf"\({N}, {N}\) \(at a quadrature point {N} MPa\)", RESULTS,
          rf"\| +local \(preset\) \|[^|]*\| +{N} \(converged\) \| +{N} \| +{N} MPa \| "
          rf"+{N} MPa = [\d.]+ σ_lim; \({N}, {N}\) \| +{N} MPa \|"),
    Quote("fesens/docs/topology.md", rf"within {N} mm of the corner its stress peaks at {N} MPa",
          RESULTS, rf"near the corner \(< {N} mm\) \|[^\n]*\n[^\n]*\n\| +local \(preset\) "
          rf"\|(?:[^|]*\|){{6}} +[\d/]+ solid, peak {N} MPa \|"),
    Quote("fesens/docs/topology.md", rf"moved by 1e-12 the run stops after {N} and {N} "
          rf"iterations with thresholded peaks of {N} MPa \(at the end of the clamped edge\) "
          rf"and {N} MPa", RESULTS,
          rf"{PERTURBED_ROW.format(seed=1)}[^\n]*\n{PERTURBED_ROW.format(seed=2)}",
          order=(0, 2, 1, 3)),
    Quote("fesens/docs/topology.md", rf"it stops at its {N} iterations", RESULTS,
          rf"\| +local, λ every iteration, fixed move \|[^|]*\| +{N} \(max_iter\)"),
    Quote("fesens/docs/topology.md", rf"where its stress peaks at {N} MPa", RESULTS,
          rf"\| +compliance, same volume \|[^|]*\|[^|]*\|[^|]*\|[^|]*\| +{N} MPa = "),
    Quote(SOLVERS, rf"\| 48x24x24 \({N}\) \| {N} s, {N} MB \|", RESULTS,
          scale_row("48x24x24", "cholmod", "s")),
    Quote(SOLVERS, rf"MB \| {N} ms, {N} MB \|\n\| 96x48x48", RESULTS,
          r"\|\s*48x24x24 \|[^\n]*\|\s*gmg-mf \|\s*([\d.]+) ms \|[^\n]*\|\s*(\d+) \|\n"),
    Quote(SOLVERS, rf"\| 96x48x48 \({N}\) \| {N} s, {N} MB \|", RESULTS,
          scale_row("96x48x48", "cholmod", "s")),
    Quote(SOLVERS, rf"\| 96x48x48 \({N}\) \| [^|]* \| {N} s, {N} MB \|", RESULTS,
          scale_row("96x48x48", "gmg-mf", "s")),
    Quote(SOLVERS, rf"\| 160x80x80 \({N}\) \| [^|]* \| {N} s, {N} MB \|", RESULTS,
          scale_row("160x80x80", "gmg-mf", "s")),
    Quote(SOLVERS, rf"refused: factor about {N} GiB", RESULTS,
          rf"the factorization of \d+ unknowns \(3D\) needs about {N}\s+GiB"),
    Quote(SOLVERS, rf"agree to {N} \(relative", RESULTS,
          r"\|\s*48x24x24 \|[^\n]*\|\s*gmg-mf \|[^\n]*\|\s*([\d.]+e-\d+) \|\s*\d+ \|\n"),
    Quote(MPI, rf"144x48x48 hex8 cantilever \({N} cells\) two ranks take {N}x less time per OC "
          rf"iteration than one, and each needs {N} of the serial", RESULTS,
          rf"on 144x48x48 hex8 \({N} cells\), petsc.*\n(?:.*\n)*?speed-up 1 -> 2 ranks: "
          rf"iteration {N}, run [\d.]+; memory per rank {N} of"),
    Quote(MPI, rf"gives {N} kB per cell of a rank's own part", RESULTS,
          rf"memory of the other ranks \(largest\).*: [\d.]+ kB per cell whatever N, {N} kB "
          rf"per cell shared"),
    Quote(MPI, rf"and {N} kB per cell of the whole mesh on every rank", RESULTS,
          rf"memory of the other ranks \(largest\).*: {N} kB per cell whatever N"),
    Quote(BENCH, rf"takes {N} times one forward solve", RESULTS,
          rf"mbb 600x200: iteration / forward solve = {N}"),
    Quote(BENCH, rf"takes {N} times as long as fesens", RESULTS,
          rf"mbb 600x200: top88-style / fesens iteration = {N}"),
    Quote(BENCH, rf"{N} gradients for compliance and {N} for a displacement norm", RESULTS,
          rf"\| 400x200 \| +compliance \|[^|]*\|[^|]*\| +{N} \|.*\n"
          rf"\| 400x200 \| displacement_norm \|[^|]*\|[^|]*\| +{N} \|"),
]


def gradient_checks(preset: str) -> Source:
    """``benchmarks/gradient_checks.py`` run again on one preset: ``fesens sensitivity
    --check`` for each of its targets (about a hundred checks in all, 10 minutes on 2 busy
    cores: one source per preset, so that parallel workers share them out)."""
    return Source(f"gradient checks {preset}", (sys.executable, str(
        ROOT / "benchmarks" / "gradient_checks.py"), "--presets", preset), timeout=3600.0)


#: A row of its table in benchmarks.md: preset, analysis, objective, wrt, Taylor rate,
#: agreement, verdict, seconds.
CHECK_ROW = re.compile(r"^\| ([\w-]+) \| ([\w-]+) \| ([\w-]+) \| (\w+) \|([^|\n]*)\|"
                       r"([^|\n]*)\| (pass|FAIL|exit [^|\n]*) \| ([\d.]+) \|$", re.M)


def _row(lead: str, *cells: str) -> str:
    return lead + r"\|".join(cells) + r"\|"


def gradient_check_quotes() -> list[Quote]:
    """The quotes of each row of the gradient-check table in benchmarks.md. A rerun gives
    the same verdict, the Taylor rate to 0.01 and the agreement within what round-off
    moves: it is round-off and truncation, and other CPUs' kernels moved it by up to
    a factor of 86 either way (mbb's E 2.5e-08 to 3.3e-09, cantilever3d's points 3.8e-08
    to 4.4e-10, inverter's points 3.4e-11 to 2.4e-09), so a rerun may give any smaller
    error and up to 100 times the quoted one; the record in RESULTS.md gives every number
    as quoted, the seconds too (a measured time, not rerun)."""
    quotes, anything = [], r"[^|\n]*"
    for row in CHECK_ROW.finditer((ROOT / BENCH).read_text(encoding="utf-8")):
        lead = r"\| " + r" \| ".join(map(re.escape, row.groups()[:4])) + r" \|"
        source = gradient_checks(row[1])
        rate = {"": anything, "-": r" - "}.get(row[5].strip(), rf" {N} ")
        error = anything if not row[6].strip() else rf" {N} "
        verdict = r" exit \d+:[^|\n]* " if row[7].startswith("exit") else f" {row[7]} "
        if N in rate:
            quotes.append(Quote(BENCH, _row(lead, rate, anything, verdict), source,
                                _row(lead, rate, anything, verdict), rel=0.01))
        quotes.append(Quote(BENCH, _row(lead, anything, error, verdict), source,
                            _row(lead, anything, error, verdict), factor=100.0))
        quotes.append(Quote(BENCH, _row(lead, rate, error, verdict, rf" {N} "), RESULTS,
                            _row(lead, rate, error, verdict, rf" {N} ")))
    return quotes


QUOTES += gradient_check_quotes()

TOPOLOGY = "fesens/docs/topology.md"


def overhang_quotes() -> list[Quote]:
    """Each row of topology.md's overhang table against bench_overhang.py's record: the
    iterations, compliance, M_nd and unsupported cells of one preset, direction and angle."""
    quotes = []
    for line in (ROOT / TOPOLOGY).read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) != 6 or cells[0] not in ("overhang", "overhang3d"):
            continue
        lead = rf"{cells[0]} \|\s*{re.escape(cells[1])} \|"
        limit = r"(?: \(limit\))?"
        quotes.append(Quote(
            TOPOLOGY, rf"\| {lead} {N}{limit} \| {N} \| {N} \| {N} \|", RESULTS,
            rf"\|\s*{lead}\s*{N}{limit} \|\s*{N} \|\s*{N} \|\s*\d+ \|\s*{N} \("))
    return quotes


QUOTES += overhang_quotes()

EXAMPLES["plastic_verification"] = example("plastic_verification")


def plastic_verification_quotes() -> list[Quote]:
    """The rows of plasticity.md's verification table, from plastic_verification.py's
    table: (the displacement in the row's label,) the reference, fesens and their relative
    difference in %."""
    leads = [lead for cell in ("quad8", "tri6", "hex8") for lead in (
        rf"cylinder {cell}: u\(b\) at p_e/2",
        *(rf"cylinder {cell}, increment {n}: p at u\(b\) = {N}" for n in (5, 8, 10)))]
    leads += [rf"strip {cell}: reaction at u = {N}" for cell in ("quad8", "tri6")]
    return [Quote("fesens/docs/plasticity.md", rf"\| {lead} \| {N} \| {N} \| \+?{N} % \|",
                  EXAMPLES["plastic_verification"], rf"{lead} *\| +{N} \| +{N} \| +\+?{N}%")
            for lead in leads]


QUOTES += plastic_verification_quotes()

#: Numbers of the prose that are not results: (document or "*", regex, why).
ALLOWED = [
    ("*", r"\b\d+\s?x\s?\d+(?:\s?x\s?\d+)?\b", "grid sizes: the cells a problem is set up with"),
    ("*", r"exit(?: code)? 130\b|\b130 interrupted", "the exit code of an interrupted run"),
    ("*", r"[A-Z][a-z]+ (?:19|20)\d\d\b", "the year of a cited paper"),
    ("*", r"§\s?\d+(?:\.\d+)*", "the section of a cited book"),
    (README, r"volume 0\.5, SIMP", "the MBB preset's volume limit"),
    (README, r"above 0\.5 and", "the ParaView threshold the reader sets"),
    ("fesens/docs/api.md", r"64-bit mode", "JAX's float64 mode"),
    ("fesens/docs/config.md", r"to 10⁻⁶ of the mesh's extent", "the point-matching tolerance"),
    ("fesens/docs/config.md", r"cells with ρ > 0\.5", "the density drawn as solid"),
    ("fesens/docs/config.md", r"magnitude 1e-50 to 1e50", "the range the config check accepts"),
    ("fesens/docs/study.md", r"\(default 10\)", "a default setting"),
    (EXAMPLES_MD, r"with 40 % conductive|with 35 % aluminium", "the examples' volume limits"),
    (EXAMPLES_MD, r"stays below 100 MPa", "the stress limit the preset sets"),
    (EXAMPLES_MD, r"Kirsch: 3 for|Euler's 9 and 25|\(true 3\.0\)",
     "closed-form references and the example's true modulus"),
    (EXAMPLES_MD, r"from 200 to 100,000 parameters|about a thousand to 161,202 unknowns",
     "the problem sizes the timing examples run"),
    (SOLVERS, r"up to 150,000 free unknowns|below 100,000 unknowns|fewer than 30 nonzeros"
     r"|from 10¹² flops|of order 1,000 or more|the 2-core benchmark",
     "the thresholds of `auto` and of the thread rule (fesens/solvers, fesens/openmp.py)"),
    (SOLVERS, r"with 24 GB", "the benchmark machine's memory"),
    (SOLVERS, r"100 OC iterations|after 100 iterations",
     "the iteration limit of examples/cantilever3d_million.toml"),
    (MPI, r"with 24 GB", "the benchmark machine's memory"),
    (MPI, r"-pc_gamg_threshold 0\.02", "a PETSc option the reader passes"),
    ("fesens/docs/combinations.md", r"combinations: optimize [\d,]+, solve [\d,]+, sensitivity "
     r"[\d,]+, study [\d,]+;\s+total [\d,]+",
     "count.py's line (tests/combinations/test_combinations.py::test_docs_quote_the_product_size)"),
    ("fesens/docs/combinations.md", r"symmetric \(1e-6\)|round-off \(1e-12, relative\)"
     r"|\(default 1000\)",
     "the walk's tolerances and shard count (SYMMETRY_TOL, SAME in tests/combinations/runner.py)"),
    (TOPOLOGY, r"45° \(the default\)|cubic cells 90° \(vertical walls only\), 45°, "
     r"26\.57°, 18\.43°, 14\.04°|between 45° and 90°|exception is 90°"
     r"|et al\. 2018|cross at 45°|projection to 16 by|ρ > 0\.5,",
     "the overhang filter's realizable angles (fesens/opt/overhang.py), its papers' year, "
     "the presets' final sharpness and the solid threshold"),
    (TOPOLOGY, r"region at 45° and at 90°|diagonal 45° is not realizable"
     r"|along `\[1, 1\]/√2` 90° and 45°, along `\[1, 1, 1\]/√3` "
     r"90°, 54\.74°, 35\.26° and 19\.47°",
     "the oblique cone's realizable angles (fesens/opt/overhang_oblique.py: oblique_angles, "
     "tests/opt/test_overhang_oblique.py)"),
    ("fesens/docs/topology.md", r"thresholded at ρ = 0\.5", "the threshold the papers measure at"),
    ("fesens/docs/topology.md", r"after the first 250 iterations",
     "the stress preset's move_shrink_after"),
    ("fesens/docs/topology.md", r"E_min = 1e-9|30 % (?:material|conductor)|radius 1\.5|"
     r"below\n?\s*0\.01; top3d stops at 200 iterations, the preset at 300|"
     r"above 150,000 free unknowns|10[⁵⁶] cells|"
     r"for 10 iterations|stop after 10 iterations",
     "the settings of the 3D presets and of bench_3d_presets.py"),
    ("fesens/docs/topology.md", r"below 0\.01 of its limit|\(default 1e-3\)|default 1e-9,"
     r"|\(default 0\.5,",
     "the status thresholds and OC defaults (the code's, tests/opt/test_convergence_status.py)"),
]

FENCE = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
HIDDEN = re.compile(r"`[^`\n]*`|\]\([^)]*\)|<[^>]*>")      # inline code, link targets, tags
TOKEN = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-+]?\d+)?"
                   r"(?![A-Za-wyz\d_])")


def _text(document: str) -> str:
    return (ROOT / document).read_text(encoding="utf-8")


def _pattern(regex: str) -> re.Pattern:
    """A quote's regex with each literal space matching any run of white space."""
    return re.compile(re.sub(r"(?<!\\) ", r"\\s+", regex))


def _number(text: str) -> float:
    return float(text.replace(",", "").replace("−", "-"))


def _half_unit(text: str) -> float:
    """Half a unit of the last digit printed: 0.005 for 60.62, 0.5e-11 for 6.1e-11."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


@functools.cache
def _output(source: Source, workdir: Path) -> str:
    if source.record:
        return _text(source.record)
    out = workdir / source.name.replace(" ", "_")
    argv = [part.replace("{out}", str(out)) for part in source.argv]
    done = subprocess.run(argv, cwd=workdir, capture_output=True, text=True,
                          timeout=source.timeout)
    assert done.returncode == 0, f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("docs-numbers")


def test_every_quote_is_in_its_document():
    for quote in QUOTES:
        assert _pattern(quote.text).search(_text(quote.document)), \
            f"{quote.document} no longer quotes {quote.text!r}: update QUOTES"


@pytest.mark.parametrize("source", [
    pytest.param(source, id=source.name, marks=[] if source.fast or FULL_RUNS else
                 pytest.mark.skip(reason="a full example run: make docs-check"))
    for source in dict.fromkeys(quote.source for quote in QUOTES)])
def test_quoted_numbers_are_reproduced(source, workdir):
    """Each source runs once (one test per source, so parallel workers share no run) and
    every quote of its output is compared."""
    output = _output(source, workdir)
    failures = []
    for quote in (quote for quote in QUOTES if quote.source == source):
        try:
            _check(quote, output)
        except AssertionError as failure:
            failures.append(f"{quote.id}: {failure}")
    assert not failures, "\n".join(failures)


def _check(quote: Quote, output: str) -> None:
    """The numbers ``quote`` quotes against those of ``output``, its source's output."""
    quoted = _pattern(quote.text).search(_text(quote.document))
    assert quoted, f"{quote.document} no longer quotes {quote.text!r}"
    matches = list(re.finditer(quote.output, output))
    assert matches, f"{quote.source.name} printed nothing matching {quote.output!r}:\n{output}"
    produced = matches[-1].groups()
    order = quote.order or tuple(range(len(produced)))
    assert len(order) == len(quoted.groups()) and set(order) == set(range(len(produced))), quote
    texts = quoted.groups()
    for position, (text, index) in enumerate(zip(texts, order, strict=True)):
        reference, printed = _number(produced[index]), produced[index]
        if position + 1 < len(order) and order[position + 1] == index:
            continue                    # the low end of a range: checked with its high end
        if position and order[position - 1] == index:   # a range "LOW to HIGH"
            low, high = _number(texts[position - 1]), _number(text)
            assert low <= reference <= high, (
                f"{quote.document} quotes {texts[position - 1]} to {text} where "
                f"{quote.source.name} gives {printed}")
            continue
        value = _number(text)
        if quote.factor and value:
            assert reference <= value * quote.factor, (
                f"{quote.document} quotes {text} where {quote.source.name} gives "
                f"{printed} (allowed up to {quote.factor:g} times the quoted value)")
            continue
        # two printed roundings of one value differ by up to a unit of the last digit; the
        # 1e-9 absorbs the binary representation of that difference (9.8 - 9.7 > 0.1)
        allowed = (_half_unit(text) + _half_unit(printed)) * (1 + 1e-9) \
            + quote.rel * abs(reference)
        assert abs(value - reference) <= allowed, (
            f"{quote.document} quotes {text} where {quote.source.name} gives "
            f"{printed} (allowed ±{allowed:.3g})")


def _prose(document: str) -> str:
    """The document with code blocks, inline code, link targets and HTML tags blanked
    (positions kept)."""
    text = _text(document)
    blank = lambda match: re.sub(r"[^\n]", " ", match.group(0))  # noqa: E731
    return HIDDEN.sub(blank, FENCE.sub(blank, text))


def _covered(document: str) -> list[tuple[int, int]]:
    text = _text(document)
    spans = [match.span() for quote in QUOTES if quote.document == document
             for match in _pattern(quote.text).finditer(text)]
    spans += [match.span() for where, regex, _ in ALLOWED if where in ("*", document)
              for match in _pattern(regex).finditer(text)]
    return spans


@pytest.mark.parametrize("document", DOCUMENTS)
def test_every_quoted_number_is_checked(document):
    prose, spans = _prose(document), _covered(document)
    unchecked = []
    for token in TOKEN.finditer(prose):
        digits = token.group(0).replace(",", "")
        if "." not in digits and len(digits) < 2:
            continue                    # single digits: counts the text sets (3 modes, 2 ranks)
        if not any(start <= token.start() and token.end() <= end for start, end in spans):
            line = prose.count("\n", 0, token.start()) + 1
            unchecked.append(f"line {line}: {token.group(0)!r} in "
                             f"{' '.join(_text(document).splitlines()[line - 1].split())}")
    assert not unchecked, (f"{document}: numbers neither in QUOTES nor in ALLOWED of "
                           f"{Path(__file__).name}:\n" + "\n".join(unchecked))


def test_every_allowance_is_used():
    for where, regex, why in ALLOWED:
        documents = DOCUMENTS if where == "*" else [where]
        assert any(_pattern(regex).search(_text(d)) for d in documents), \
            f"stale ALLOWED entry {regex!r} ({why})"


#: What a transcript may differ in: wall times, and the solver backend the machine has.
MACHINE = [(re.compile(r"\b\d+\.\d+ s\b"), "<time> s"), (re.compile(r"; solver: .*$"), "")]


def _unmachined(line: str) -> str:
    for pattern, replacement in MACHINE:
        line = pattern.sub(replacement, line)
    return line


def _transcripts() -> list:
    return [pytest.param(document, code, id=f"{document}: {code.splitlines()[0][:60]}")
            for document in DOCUMENTS for language, code in FENCE.findall(_text(document))
            if language not in ("bash", "shell", "python", "toml")]


@pytest.mark.parametrize("document, transcript", _transcripts())
def test_transcript_reproduces(document, transcript, workdir):
    """A ```text block is a command's output (``$ command`` first, ``...`` for lines left
    out): the command prints every line shown, wall times and solver backend aside."""
    command, *shown = transcript.splitlines()
    assert command.startswith("$ "), f"{document}: a text block must start with '$ command'"
    argv = command[2:].split()
    argv[0] = str(Path(sys.executable).parent / argv[0])
    done = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    printed = [_unmachined(line) for line in done.stdout.splitlines()]
    for line in shown:
        if line.strip() != "...":
            assert _unmachined(line) in printed, \
                f"{document}: {line!r} is not printed by {command[2:]}"
