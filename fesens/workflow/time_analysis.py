"""``fesens solve`` of a time-dependent config (``[analysis] type = "transient" |
"dynamic" | "harmonic"``, :mod:`fesens.config.time_sections`), and what ``fesens
sensitivity`` reports of its analysis.

* transient and dynamic ``solve``: the fields every ``time.output_every`` steps and at the
  last (``solution_NNNN.vtu``, written one at a time as the run streams its states, and
  ``solution.pvd``, their ParaView time series), the probes' history at every level
  (``history.csv``, ``history.png``: ``[[probes]]``, else the objective's point, else the
  field's extrema), ``solution.json``, and a progress line every tenth of the run;
* harmonic ``solve``: the dynamic compliance ``|f · u|`` and the probes' amplitudes at every
  driving frequency (``frequency_response.csv``, ``frequency_response.png``);
* ``sensitivity``: what its summary says of the analysis (:func:`analysis_summary`);
  the objective and its gradient are :class:`~fesens.config.evaluation.ConfigEvaluation`'s,
  the code path of every analysis (the run's time aggregate by its discrete adjoint, the
  response summed over the driving frequencies), written by
  :mod:`fesens.workflow.analysis` as a static sensitivity is.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens import __version__
from fesens.config import Config, build_model
from fesens.config.evaluation import ConfigEvaluation
from fesens.config.increments import INCREMENTAL
from fesens.config.nonlinear import is_nonlinear
from fesens.config.time_design import (
    inertia,
    refusing_resonance,
    run_inputs,
    time_problem,
)
from fesens.config.time_sections import STATIC, analysis_type, angular_frequencies, probe_name
from fesens.fem.transient import DynamicProblem, HarmonicAnalysis
from fesens.mesh import write_mesh
from fesens.output import ResultsFolder
from fesens.plotting.histories import plot_histories
from fesens.solvers import solver_class
from fesens.workflow.nonlinear import tangent_solver_name

#: Progress lines of a run: one every this fraction of its steps.
PROGRESS_PARTS = 10


def is_time_dependent(config: Config) -> bool:
    """Whether the config's analysis is not a static solve."""
    return analysis_type(config.data) != STATIC


# ------------------------------------------------------------------ the run
def _probes(config: Config, model) -> dict[str, int]:
    """``{column: dof}`` the history follows: ``[[probes]]``, else the objective's point."""
    n_comp = model.n_components
    probes = config.data.get("probes")
    if probes:
        return {p["name"]: config.mesh.nearest_node(p["point"]) * n_comp + p["component"]
                for p in probes}
    objective = config.data.get("objective") or {}
    if "point" in objective:
        node = config.mesh.nearest_node(objective["point"])
        comp = objective.get("component", 0)
        return {probe_name(config.physics_class, node, comp, n_comp > 1): node * n_comp + comp}
    return {}


def _point_fields(model, fields: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Nodal fields ``(n_dofs,)`` as point data ``(n_points,)`` or ``(n_points, dim)``."""
    n_comp = model.n_components
    return {name: (values if n_comp == 1 else values.reshape(-1, n_comp))
            for name, values in fields.items()}


def collection(entries: list[tuple[float, str]]) -> str:
    """A ParaView ``.pvd`` time series of ``(time, file)`` entries."""
    lines = ['<?xml version="1.0"?>',
             '<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">',
             "  <Collection>"]
    lines += [f'    <DataSet timestep="{t!r}" group="" part="0" file="{name}"/>'
              for t, name in entries]
    return "\n".join([*lines, "  </Collection>", "</VTKFile>"]) + "\n"


def _solver_name(config: Config, model) -> str:
    """The backend that solves the run's matrices (a nonlinear physics': its tangent's,
    ``auto`` resolved)."""
    solver = config.data["solver"]
    if is_nonlinear(config.physics_class):
        return tangent_solver_name(model, solver["backend"], solver["options"])
    return solver_class(solver["backend"]).name


def _csv(columns: dict[str, np.ndarray]) -> str:
    rows = zip(*(np.asarray(v).tolist() for v in columns.values()), strict=True)
    return ",".join(columns) + "\n" + "".join(
        ",".join(repr(float(x)) for x in row) + "\n" for row in rows)


def solve_in_time(config: Config, folder: ResultsFolder, *, force: bool,
                  echo: Callable[[str], None]) -> dict:
    """``fesens solve`` of a time-dependent config (see the module docstring); returns the
    JSON summary."""
    if analysis_type(config.data) == "harmonic":
        return _solve_harmonic(config, folder, force=force, echo=echo)
    model = build_model(config)
    problem = time_problem(config, model)
    n_steps, every = problem.n_steps, config.data["time"]["output_every"]
    written = set(range(0, n_steps + 1, every)) | {n_steps}
    probes, field = _probes(config, model), model.field_name
    dynamic = isinstance(problem, DynamicProblem)
    folder.prepare(clear=force)
    times, history, entries = [], {name: [] for name in probes}, []
    extrema = {f"max_{field}": [], f"min_{field}": []}
    report = max(n_steps // PROGRESS_PARTS, 1)
    echo(f"{config.name}: {model.describe()}; {analysis_type(config.data)} run, "
         f"{n_steps} steps of {problem.times[1] - problem.times[0]:.6g} "
         f"({config.data['time']['scheme']})")
    for state in problem.states(**run_inputs(config)):
        n, t, u = state[0], state[1], state[2]
        times.append(t)
        for name, dof in probes.items():
            history[name].append(u[dof])
        values = u if model.n_components == 1 else np.linalg.norm(
            u.reshape(-1, model.n_components), axis=1)
        extrema[f"max_{field}"].append(values.max())
        extrema[f"min_{field}"].append(values.min())
        if n in written:
            fields = {field: u} if not dynamic else {field: u, "velocity": state[3],
                                                     "acceleration": state[4]}
            name = f"solution_{len(entries):04d}.vtu"
            write_mesh(folder.file(name), config.mesh,
                       point_data=_point_fields(model, fields))
            entries.append((t, name))
        if n % report == 0 and n:
            echo(f"  step {n}/{n_steps}, t = {t:.6g}, max {field} "
                 f"{extrema[f'max_{field}'][-1]:.6g}")
    folder.write_text("solution.pvd", collection(entries))
    curves = {name: np.array(v) for name, v in history.items()} or {
        k: np.array(v) for k, v in extrema.items()}
    folder.write_text("history.csv", _csv({"time": np.array(times), **curves}))
    plot_histories(np.array(times), curves, folder.file("history.png"), xlabel="time",
                   ylabel=field, title=f"{config.name}: {field} in time")
    summary = {"name": config.name, "physics": config.physics,
               "analysis": analysis_type(config.data), "dofs": model.dofmap.n_dofs,
               "steps": n_steps, "scheme": config.data["time"]["scheme"],
               "output_times": [t for t, _ in entries],
               "final": {k: float(v[-1]) for k, v in {**extrema, **history}.items()},
               "factorizations": problem.stats["factorizations"],
               **({"newton_iterations": problem.stats["newton_iterations"]}
                  if "newton_iterations" in problem.stats else {}),
               "solver": _solver_name(config, model),
               "fesens_version": __version__}
    folder.write_json("solution.json", summary)
    echo(f"results in {folder.path}: {len(entries)} fields solution_NNNN.vtu, solution.pvd, "
         "history.csv, history.png, solution.json")
    return summary


def _solve_harmonic(config: Config, folder: ResultsFolder, *, force: bool,
                    echo: Callable[[str], None]) -> dict:
    model = build_model(config)
    data = config.data
    omegas = angular_frequencies(data)
    damping = data["damping"]
    with refusing_resonance(config):  # before anything is written
        result = HarmonicAnalysis(model).run(omegas, density=inertia(config),
                                             damping=(damping["mass"], damping["stiffness"]))
    probes = _probes(config, model)
    folder.prepare(clear=force)
    columns = {"frequency": np.asarray(data["harmonic"]["frequencies"]), "omega": omegas,
               "compliance": np.asarray(result.compliance())}
    for name, dof in probes.items():
        columns[f"{name}_amplitude"] = np.asarray(result.amplitude([dof]))[:, 0]
    folder.write_text("frequency_response.csv", _csv(columns))
    curves = {k: v for k, v in columns.items() if k not in ("frequency", "omega")}
    plot_histories(columns["frequency"], curves, folder.file("frequency_response.png"),
                   xlabel="driving frequency (Hz)", ylabel="amplitude",
                   title=f"{config.name}: frequency response", log_y=True)
    summary = {"name": config.name, "physics": config.physics, "analysis": "harmonic",
               "dofs": model.dofmap.n_dofs,
               "frequencies": columns["frequency"].tolist(),
               "compliance": columns["compliance"].tolist(),
               "fesens_version": __version__}
    folder.write_json("solution.json", summary)
    for f, c in zip(columns["frequency"], columns["compliance"], strict=True):
        echo(f"  {f:.6g} Hz: dynamic compliance |f·u| {c:.6g}")
    echo(f"results in {folder.path}: frequency_response.csv, frequency_response.png, "
         "solution.json")
    return summary


# ------------------------------------------------------------------ the objective
def analysis_summary(config: Config, evaluation: ConfigEvaluation) -> tuple[dict, str]:
    """What ``sensitivity.json`` and the first line say of a time-dependent or incremental
    analysis whose objective ``evaluation`` differentiated: the run's aggregate, steps (or
    increments) and solver, or the driving frequencies (no solver: the response always
    factorizes its complex matrix with SuperLU)."""
    kind = analysis_type(config.data)
    if kind == INCREMENTAL:
        spec, steps = evaluation.specs[0], len(config.data["analysis"]["factors"]) - 1
        over = (f"increment {spec['increment']}" if "increment" in spec
                else spec["over_increments"])
        return ({"analysis": kind, "over_increments": over, "increments": steps,
                 "solver": _solver_name(config, evaluation.model)},
                f" ({over} over {steps} increments)")
    if kind == "harmonic":
        frequencies = list(config.data["harmonic"]["frequencies"])
        return ({"analysis": kind, "frequencies": frequencies},
                f" (summed over {len(frequencies)} driving frequencies)")
    over, steps = evaluation.specs[0]["over_time"], evaluation.run.n_steps
    return ({"analysis": kind, "over_time": over, "steps": steps,
             "solver": _solver_name(config, evaluation.model)},
            f" ({over} over {steps} steps)")
