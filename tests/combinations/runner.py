"""One point of the product through the command line, and the invariants its result must
satisfy.

:func:`outcome` writes the point's config (:func:`axes.config_for`), runs its command with
click's ``CliRunner`` in this process, and returns what happened: refused at check time
(exit 2, one ``error:`` line, nothing written), or run and checked by the invariants that
apply (:data:`INVARIANTS`); any other end (exit 1, a raw exception, a refusal after files
were written, an invariant broken) is a failure, described in one line.
"""

from __future__ import annotations

import contextlib
import csv
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import meshio
import numpy as np
from axes import ITERATIONS, RESUME_AFTER, config_for
from click.testing import CliRunner, Result

from fesens.ad import grad
from fesens.ad.checks import check_grad
from fesens.cli import cli
from fesens.config.objectives import OBJECTIVES
from fesens.config.toml_writer import dumps
from fesens.opt.status import STATUSES
from fesens.physics import PHYSICS
from fesens.solvers import make_solver, solver_class

#: Relative difference allowed between two evaluations of one quantity by two paths that
#: should compute it identically (study and sensitivity, a weight of -1 and of +1) where
#: the solves are direct: round-off only.
SAME = 1e-12
#: With an iterative solver each solve stops at a relative residual ``rtol`` from its own
#: start (a warm start differs between two evaluations), so two evaluations differ at the
#: level of ``rtol`` (by up to the condition number times it; measured on the tiny meshes:
#: 1e-2 rtol, a transient heat run with ``gmg``); allowed: this multiple of the point's
#: ``rtol``.
ITERATIVE_SAME = 10.0
#: Relative error of the gradient's directional derivative against the central difference
#: beyond what the measured round-off explains (fesens.ad.check_grad's default).
GRADIENT_RTOL = 1e-5
#: Largest difference of mirrored densities in a design of mirror-symmetric data.
SYMMETRY_TOL = 1e-6
#: Exit codes of a run that ended: 0, or the documented code of an optimization that stopped
#: for a reason it names (infeasible, degenerate: fesens.opt.status.STATUSES).
RUN_CODES = tuple(sorted({status.exit_code for status in STATUSES.values()}))
#: Exit code of refused input.
REFUSED = 2


@dataclass
class Outcome:
    """What a point did.

    Attributes
    ----------
    point : dict
    status : {"refused", "checked", "failed"}
    message : str
        The refusal's line, or what failed.
    checks : list of str
        The invariants that were checked (a run).
    """

    point: dict
    status: str
    message: str = ""
    checks: list[str] = field(default_factory=list)


class InvariantError(AssertionError):
    """An invariant a run broke."""


@contextlib.contextmanager
def recorded_gradients() -> Iterator[list[dict]]:
    """Record each ``vjp`` the workflow takes: the function, the point, the value and the
    gradient its pullback returned, so that the test can difference the very function
    ``fesens sensitivity`` differentiated."""
    records: list[dict] = []

    def recording(real):
        def record_vjp(fun, x):
            value, pullback = real(fun, x)
            record = {"fun": fun, "at": x, "value": value}
            records.append(record)

            def pull(cotangent):
                record["gradient"] = pullback(cotangent)
                return record["gradient"]

            return value, pull

        return record_vjp

    patched = {module: vars(module)["vjp"] for name, module in list(sys.modules.items())
               if name.startswith("fesens.workflow") and "vjp" in vars(module)}
    for module, real in patched.items():
        module.vjp = recording(real)
    try:
        yield records
    finally:
        for module, real in patched.items():
            module.vjp = real


def invoke(*args) -> Result:
    """``fesens ARGS`` in this process; a raw exception is re-raised."""
    result = CliRunner().invoke(cli, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def _written(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def _errors(result: Result) -> list[str]:
    """The lines of the result's stderr that are not warnings."""
    return [line for line in result.stderr.splitlines()
            if line.strip() and not line.startswith("warning:")]


def _write(folder: Path, config: dict, name: str = "config.toml") -> Path:
    path = folder / name
    path.write_text(dumps(config), encoding="utf-8")
    return path


def _arguments(point: dict, config_path: Path, out: Path) -> list:
    command = point["command"]
    extra = {"sensitivity": ["--wrt", point.get("wrt")], "optimize": []}.get(command, [])
    return [command, config_path, "--out", out, "-q", *extra]


def outcome(point: dict, folder: Path) -> Outcome:
    """Run ``point`` in ``folder`` (empty) and check what applies."""
    config = config_for(point)
    out = folder / "out"
    if point["command"] == "study":
        source = _write(folder, _study_file(config, _write(folder, config)), "study.toml")
        args = ["study", source, "--out", out, "--workers", "0", "-q"]
    else:
        args = _arguments(point, _write(folder, config), out)
    try:
        with recorded_gradients() as records:
            result = invoke(*args)
    except Exception as exc:  # a raw exception is a bug whatever the input
        return Outcome(point, "failed", f"raised {type(exc).__name__}: {exc}")
    if result.exit_code == REFUSED:
        return _refusal(point, result, out)
    if result.exit_code not in RUN_CODES:
        return Outcome(point, "failed", f"exit {result.exit_code}: "
                       f"{' | '.join(_errors(result))}")
    run = Run(point, config, folder, out, records)
    checks = []
    for name, invariant in INVARIANTS[point["command"]]:
        try:
            if invariant(run) is not False:
                checks.append(name)
        except InvariantError as exc:
            return Outcome(point, "failed", f"{name}: {exc}", checks)
        except Exception as exc:  # the invariant's own runs must not crash either
            return Outcome(point, "failed", f"{name}: raised {type(exc).__name__}: {exc}",
                           checks)
    return Outcome(point, "checked", "", checks)


def _refusal(point: dict, result: Result, out: Path) -> Outcome:
    lines, written = _errors(result), _written(out)
    if len(lines) != 1 or not lines[0].startswith("error:"):
        return Outcome(point, "failed", f"refused with {len(lines)} lines, not one "
                       f"'error:' line: {' | '.join(lines)[:300]}")
    if written:
        return Outcome(point, "failed", f"refused after writing {written}: {lines[0]}")
    return Outcome(point, "refused", lines[0])


@dataclass
class Run:
    """A point that ran: what the invariants read."""

    point: dict
    config: dict
    folder: Path
    out: Path
    records: list[dict]

    def rerun(self, config: dict, name: str, *extra, command: str | None = None) -> Result:
        """Another run of the point's command on ``config`` into ``folder/name``; it must
        succeed."""
        folder = self.folder / name
        folder.mkdir()
        args = [command or self.point["command"], _write(folder, config), "--out",
                folder / "out", "-q", *extra]
        result = invoke(*args)
        if result.exit_code not in RUN_CODES:
            raise InvariantError(f"{' '.join(map(str, args[:1] + list(extra)))} exit "
                                 f"{result.exit_code}: {' | '.join(_errors(result))}")
        return result


def _relative(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)),
                1e-300)
    return float(np.max(np.abs(a - b), initial=0.0)) / scale


def same_tolerance(config: dict) -> float:
    """The relative difference allowed between two evaluations of one quantity of
    ``config``: :data:`SAME` where its backend is direct, else :data:`ITERATIVE_SAME` times
    the ``rtol`` its solver runs with (the config's ``[solver] options``, else the
    backend's default)."""
    solver = config.get("solver", {})
    name = solver.get("backend", "auto")
    if solver_class(name).is_direct:
        return SAME
    return max(SAME, ITERATIVE_SAME * make_solver(name, **solver.get("options", {})).rtol)


def _values(gradient) -> np.ndarray:
    if isinstance(gradient, dict):
        return np.array([gradient[key] for key in sorted(gradient)], dtype=float)
    return np.asarray(gradient, dtype=float)


# ------------------------------------------------------------------ sensitivity
def gradient_matches_differences(run: Run) -> None:
    """The gradient ``fesens sensitivity`` wrote is the gradient of the function it
    differentiated, and that gradient along a random direction equals the central
    difference, to what round-off explains."""
    (record,) = run.records
    fun, at = record["fun"], record["at"]
    error = _relative(_values(record["gradient"]), _values(grad(fun)(at)))
    tolerance = same_tolerance(run.config)
    if error > tolerance:
        raise InvariantError(f"the gradient written differs from the objective's gradient "
                             f"by {error:.2e} (relative; allowed {tolerance:.0e})")
    try:
        check_grad(fun, at, n_directions=1, rtol=GRADIENT_RTOL, seed=1)
    except AssertionError as exc:
        raise InvariantError(str(exc)) from None


def weight_sign_respected(run: Run) -> bool:
    """``weight = -1`` gives minus the value and minus the gradient."""
    kind = _objective_kind(run)
    if kind is None or "weight" not in kind.keys:
        return False
    config = json.loads(json.dumps(run.config))
    config["objective"]["weight"] = -1.0
    (record,) = run.records
    with recorded_gradients() as negative:
        run.rerun(config, "weight", "--wrt", run.point["wrt"])
    (flipped,) = negative
    tolerance = same_tolerance(run.config)
    for what in ("value", "gradient"):
        error = _relative(_values(flipped[what]), -_values(record[what]))
        if error > tolerance:
            raise InvariantError(f"weight = -1: {what} is not minus the weight = 1 one "
                                 f"(relative difference {error:.2e}, allowed "
                                 f"{tolerance:.0e})")
    return True


def _objective_kind(run: Run):
    fragment = PHYSICS.get(run.point["physics"]).config
    name = run.config["objective"]["type"]
    return OBJECTIVES.get({**fragment.responses, **fragment.eigen_responses}.get(name, name))


# ------------------------------------------------------------------ study
def _study_file(config: dict, base: Path) -> dict:
    """One sample at the config's own load magnitude, its objective as the output."""
    return {"base": base.name, "design": {"type": "grid"},
            "parameters": [{"target": "loads.F.magnitude", "values": [1.0]}],
            "outputs": [dict(config["objective"])]}


def study_equals_sensitivity(run: Run) -> None:
    """The study's sample equals ``fesens sensitivity --wrt loads`` of the same config,
    value and derivative."""
    (row,) = json.loads((run.out / "results.json").read_text())
    if row["status"] != "ok":
        raise InvariantError(f"the study's sample failed: {row['error']}")
    name = run.config["objective"]["type"]
    with recorded_gradients() as records:
        run.rerun(run.config, "sensitivity", "--wrt", "loads", command="sensitivity")
    (record,) = records
    pairs = {"value": (row[name], record["value"]),
             "derivative": (row[f"d({name})/d(F.magnitude)"], record["gradient"]["F"])}
    tolerance = same_tolerance(run.config)
    for what, (study, sensitivity) in pairs.items():
        if _relative(study, sensitivity) > tolerance:
            raise InvariantError(f"study {what} {float(study)!r} != sensitivity "
                                 f"{float(np.asarray(sensitivity))!r} (relative difference "
                                 f"{_relative(study, sensitivity):.2e}, allowed "
                                 f"{tolerance:.0e})")


# ------------------------------------------------------------------ optimize
def _history(out: Path) -> list[dict]:
    with open(out / "history.csv", newline="") as file:
        return [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(file)]


def resume_equals_uninterrupted(run: Run) -> None:
    """``--max-iter 2`` then ``--resume`` to the full count gives the uninterrupted run's
    history and design, bit for bit."""
    first = run.folder / "resumed"
    first.mkdir()
    path = _write(first, run.config)
    for extra in (["--max-iter", RESUME_AFTER], ["--resume", "--max-iter", ITERATIONS]):
        result = invoke("optimize", path, "--out", first / "out", "-q", *extra)
        if result.exit_code not in RUN_CODES:
            raise InvariantError(f"optimize {' '.join(map(str, extra))}: exit "
                                 f"{result.exit_code}: {' | '.join(_errors(result))}")
    if _history(first / "out") != _history(run.out):
        raise InvariantError("the resumed run's history differs from the uninterrupted one's")
    resumed, whole = (np.load(folder / "checkpoint.npz")["x"] for folder in (first / "out",
                                                                          run.out))
    if not np.array_equal(resumed, whole):
        raise InvariantError(f"the resumed design differs by {_relative(resumed, whole):.2e}")


def symmetric_data_symmetric_design(run: Run) -> None:
    """Mirror-symmetric data (the cantilever about its mid-plane) give a mirror-symmetric
    design."""
    design = meshio.read(run.out / "design.vtu")
    density = np.concatenate(design.cell_data["density"])
    centres = np.concatenate([design.points[block.data].mean(axis=1)
                              for block in design.cells])
    size = run.config["mesh"]["size"]
    for axis in range(1, len(size)):
        mirrored = centres.copy()
        mirrored[:, axis] = size[axis] - mirrored[:, axis]
        order = _matching(centres, mirrored)
        error = float(np.max(np.abs(density - density[order])))
        if error > SYMMETRY_TOL:
            raise InvariantError(f"the design is not symmetric about the mid-plane normal to "
                                 f"axis {axis}: densities of mirrored cells differ by "
                                 f"{error:.2e}")


def _matching(centres: np.ndarray, mirrored: np.ndarray) -> np.ndarray:
    """For each mirrored centre, the cell whose centre it is."""
    scale = float(np.ptp(centres, axis=0).max())
    keys = {tuple(np.round(c / scale, 9)): i for i, c in enumerate(centres)}
    return np.array([keys[tuple(np.round(c / scale, 9))] for c in mirrored])


def _ran(run: Run) -> None:
    """Nothing more for ``solve``: it ran (exit 0)."""


#: The invariants of each command, in order: ``(name, check(run))``; a check returns False
#: where it does not apply.
INVARIANTS: dict[str, tuple[tuple[str, Callable[[Run], object]], ...]] = {
    "solve": (("ran", _ran),),
    "sensitivity": (("gradient = central difference", gradient_matches_differences),
                    ("weight sign", weight_sign_respected)),
    "study": (("study sample = sensitivity", study_equals_sensitivity),),
    "optimize": (("symmetric data, symmetric design", symmetric_data_symmetric_design),
                 ("resume = uninterrupted", resume_equals_uninterrupted)),
}


def passes_check(point: dict, folder: Path) -> bool:
    """Whether the point's config passes the config check alone (no run): a quick filter
    that lets a sample spend its time on points that run."""
    from fesens.config import load_config
    from fesens.errors import FesensError

    path = _write(folder, config_for(point), "checked.toml")
    try:
        load_config(path, optimize=point["command"] == "optimize")
    except (FesensError, ValueError, OSError):
        return False
    finally:
        path.unlink()
    return True
