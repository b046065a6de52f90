"""``fesens solve`` and ``fesens sensitivity`` of a time-dependent config (``[analysis] type
= "transient" | "dynamic" | "harmonic"``, :mod:`fesens.config.time_sections`).

* transient and dynamic ``solve``: the fields every ``time.output_every`` steps and at the
  last (``solution_NNNN.vtu``, written one at a time as the run streams its states, and
  ``solution.pvd``, their ParaView time series), the probes' history at every level
  (``history.csv``, ``history.png``: ``[[probes]]``, else the objective's point, else the
  field's extrema), ``solution.json``, and a progress line every tenth of the run;
* harmonic ``solve``: the dynamic compliance ``|f · u|`` and the probes' amplitudes at every
  driving frequency (``frequency_response.csv``, ``frequency_response.png``);
* transient and dynamic ``sensitivity``: the objective's time aggregate
  (``[objective] over_time``) through the run's one primitive, whose gradient is the
  discrete adjoint (a nonlinear physics' run steps by Newton: its adjoint is in
  :mod:`fesens.fem.transient.nonlinear_steps`), written as a static sensitivity is;
* harmonic ``sensitivity``: the objective's response summed over the driving frequencies,
  ``Σ_ω |j(u(ω))|`` (what ``fesens optimize`` minimizes), through the frequency response's
  primitive, written likewise.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens import __version__
from fesens.ad import vjp
from fesens.config import Config, build_interpolation, build_model
from fesens.config.nonlinear import is_nonlinear
from fesens.config.time_design import (
    aggregate,
    harmonic_objective,
    inertia,
    refusing_resonance,
    run_inputs,
    step_objective,
    time_problem,
)
from fesens.config.time_sections import STATIC, analysis_type, angular_frequencies, probe_name
from fesens.fem.model.parameters import SCALE
from fesens.fem.transient import DynamicProblem, harmonic_response
from fesens.mesh import write_mesh
from fesens.output import ResultsFolder, sensitivity_name
from fesens.plotting.histories import plot_histories
from fesens.solvers import solver_class
from fesens.workflow.analysis import (
    _field_sensitivities,
    _interpolation_label,
    _load_sensitivities,
    _point_sensitivities,
    _wrt_check,
    objective_spec,
)
from fesens.workflow.design_input import full_material, read_design
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


def _collection(entries: list[tuple[float, str]]) -> str:
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
    folder.write_text("solution.pvd", _collection(entries))
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
        result = harmonic_response(model, omegas, density=inertia(config),
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
def sensitivity_in_time(config: Config, folder: ResultsFolder, *, wrt: str,
                        objective: str | None, design, force: bool,
                        echo: Callable[[str], None]) -> dict:
    """``fesens sensitivity`` of a time-dependent config: the gradient of the objective's
    time aggregate by the discrete adjoint of the run (one primitive), or of its response
    summed over the driving frequencies by the frequency response's adjoint."""
    kind = analysis_type(config.data)
    spec = objective_spec(config, objective)
    model = build_model(config)
    _wrt_check(config, model, wrt)
    at_design = full_material(config) if design is None else read_design(config, design)
    interpolation = build_interpolation(config)
    rho = at_design.density
    if kind == "harmonic":
        evaluate, over, count = _over_frequencies(config, model, spec)
    else:
        evaluate, over, count = _over_time(config, model, spec)

    def objective_of(parameter):
        density = parameter if wrt == "density" else rho
        inputs = {SCALE.name: density if interpolation is None else interpolation(density)}
        if wrt not in ("density", "loads", "points"):
            inputs[wrt] = parameter
        return evaluate(_mass_factor(interpolation, density),
                        parameter if wrt == "loads" else None,
                        parameter if wrt == "points" else None, inputs, density)

    if wrt == "loads":
        at = {name: 1.0 for name in model.loads}
    elif wrt == "density":
        at = rho.copy()
    elif wrt == "points":
        at = config.mesh.points.copy()
    else:
        at = np.broadcast_to(np.asarray(getattr(model, wrt), dtype=float),
                             (config.mesh.n_cells,)).copy()
    value, pullback = vjp(objective_of, at)
    value, gradient = float(value), pullback(np.ones(()))
    folder.prepare(clear=force)
    summary = {"name": config.name, "objective": spec["type"], "value": value, "wrt": wrt,
               "analysis": kind, **over, "design": at_design.source,
               "interpolation": _interpolation_label(interpolation),
               "fesens_version": __version__}
    echo(f"{config.name}: {spec['type']} ({count}) at {at_design.source}, interpolation "
         f"{summary['interpolation']}")
    field_name = sensitivity_name(spec["type"], wrt)
    cell_data, point_data = {"density": rho}, {}
    if wrt == "loads":
        _load_sensitivities(config, folder, summary, at, gradient, None, echo)
    elif wrt == "points":
        point_data.update(_point_sensitivities(config, folder, summary, field_name, gradient,
                                               None, echo))
    else:
        cell_data.update(_field_sensitivities(config, folder, summary, field_name, gradient,
                                              None, echo))
    write_mesh(folder.file("sensitivity.vtu"), config.mesh, point_data=point_data,
               cell_data=cell_data)
    folder.write_json("sensitivity.json", summary)
    echo(f"results in {folder.path}: " + ", ".join(sorted(
        p.name for p in folder.path.iterdir() if p.name.startswith("sensitivity"))))
    return summary



def _mass_factor(interpolation, density):
    """The mass factor of the design densities: the interpolation's ``mass`` where it has
    one (as the optimizer's design problem takes it), else the densities."""
    mass = getattr(interpolation, "mass", None)
    return mass(density) if callable(mass) else density


def _over_time(config: Config, model, spec: dict) -> tuple[Callable, dict, str]:
    """``evaluate(mass, loads, points, inputs, density)``: the objective's time aggregate
    over the run (one traced primitive), with what the summary and the first line say of
    it."""
    problem = time_problem(config, model)
    term = step_objective(spec, config, model)

    def evaluate(mass, loads, points, inputs, density):
        values = problem.values(term, term_args=term.arguments(loads, points, inputs,
                                                               density),
                                loads=loads, points=points,
                                **{**run_inputs(config, mass), **inputs})
        return aggregate(values, problem.times, spec)

    over = spec.get("over_time", "final")
    return (evaluate, {"over_time": over, "steps": problem.n_steps,
                       "solver": _solver_name(config, model)},
            f"{over} over {problem.n_steps} steps")


def _over_frequencies(config: Config, model, spec: dict) -> tuple[Callable, dict, str]:
    """``evaluate(mass, loads, points, inputs, density)``: ``Σ_ω |j(u(ω))|`` of the objective's
    functional ``j`` (linear in the field) over the driving frequencies, with what the
    summary and the first line say of it (no solver: the response always factorizes its
    complex matrix with SuperLU)."""
    data = config.data
    omegas, damping = angular_frequencies(data), data["damping"]

    def evaluate(mass, loads, points, inputs, density):
        with refusing_resonance(config):
            response = harmonic_response(model, omegas, loads=loads, points=points,
                                         density=inertia(config, mass),
                                         damping=(damping["mass"], damping["stiffness"]),
                                         **inputs)
        # the weight outside the magnitude: inside, its sign would vanish in |·|
        return harmonic_objective(spec, config, model, loads, points)(response)

    frequencies = list(data["harmonic"]["frequencies"])
    return (evaluate, {"frequencies": frequencies},
            f"summed over {len(frequencies)} driving frequencies")
