"""``fesens solve`` and ``fesens sensitivity``: one forward solve (and one adjoint) of the
model a config describes. ``solve`` uses the full material everywhere; ``sensitivity`` the
full material or a design (``--design``) through the config's material interpolation.
The other optimization sections of the config are ignored (a checkpoint design reads its
filter and projection).

What is plotted and reported, which objectives can be differentiated and with respect to
what, is read from the physics' configuration fragment (:mod:`fesens.physics.spec`) and its
parameters, through the registry.

With ``[[load_cases]]`` every case is solved from one factorization (one solve with several
right-hand sides): ``solve`` writes each case's fields (``<field>_<case>``) and numbers,
``sensitivity`` each case's gradient (``d_<objective>_<case>_d_<wrt>``, from one adjoint
sweep per case) and the combined one (the weighted sum, or with ``objective.combine =
"max"`` the largest case's).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fesens import __version__
from fesens.ad import getval, vjp
from fesens.config import (
    Config,
    ConfigError,
    build_model,
    selections,
)
from fesens.config.checks import check_typed, join
from fesens.config.evaluation import ConfigEvaluation, solve_inputs
from fesens.config.increments import is_incremental
from fesens.config.load_cases import combination, combined_value
from fesens.config.nonlinear import is_nonlinear
from fesens.config.physics_keys import response_variants
from fesens.config.time_sections import analysis_type
from fesens.errors import NewtonError
from fesens.fem.model.linear import LinearModel
from fesens.fem.model.matrix_free import wants_matrix_free
from fesens.fem.model.solution import Solution
from fesens.mesh import write_mesh
from fesens.opt import case_state
from fesens.output import ResultsFolder
from fesens.plotting import plot_cell_field, plot_nodal_field
from fesens.solvers import solver_class
from fesens.workflow.common import input_files, reported_values
from fesens.workflow.design_input import full_material, read_design
from fesens.workflow.gradient_check import check_sensitivity
from fesens.workflow.nonlinear import (
    add_config_hint,
    newton_summary,
    objective_levels,
    tangent_solver_name,
    write_last_converged,
    write_load_path,
)
from fesens.workflow.ranks import rank_output
from fesens.workflow.targets import WRT, target, targets, wrt_choices

__all__ = ["compute_sensitivity", "compute_solution", "objective_spec", "report_solve",
           "report_sensitivity", "run_sensitivity", "run_solve", "solved_cases",
           "write_sensitivity", "write_solution", "wrt_choices"]


def _support_label(support: dict, index: int) -> str:
    return support.get("group") or f"supports[{index}]"


def _output_fields(solution: Solution) -> tuple[dict, dict]:
    """``(point_data, cell_data)`` of a solution as plain arrays."""
    return ({k: np.asarray(getval(v)) for k, v in solution.point_data().items()},
            {k: np.asarray(getval(v)) for k, v in solution.cell_data().items()})


def _solution_png(config: Config, solution: Solution, fields: tuple[dict, dict],
                  path: Path, case: str = "") -> Path | None:
    """The physics' picture (:class:`~fesens.physics.spec.Plot`) of a 2D solution (of the
    load case named ``case``)."""
    plot, mesh = config.physics_class.config.plot, config.mesh
    if mesh.dim != 2 or plot is None:
        return None
    point_data, cell_data = fields
    if plot.field in point_data:  # drawn smoothly between the nodes
        draw, values = plot_nodal_field, np.reshape(point_data[plot.field], (mesh.n_points, -1))
        values = values[:, 0]
    else:
        draw, values = plot_cell_field, cell_data[plot.field]
    displacement = np.asarray(getval(solution.field)) if plot.deformed else None
    return draw(mesh, values, path, displacement=displacement,
                title=f"{config.name}{f' ({case})' if case else ''}: {plot.title}, "
                      f"max {np.max(values):.4g}",
                label=plot.label, cmap="inferno", clip_percentile=plot.clip_percentile)


def run_solve(config: Config, out: str | Path, *, force: bool = False,
              echo: Callable[[str], None] = print, command: str = "fesens solve") -> dict:
    """Solve the config's model; write ``solution.vtu``, ``solution.json`` (and
    ``solution.png`` in 2D) to ``out``. Returns the JSON summary."""
    with rank_output(Path(out), force=force, resume=False, echo=echo) as ours:
        folder = ResultsFolder(ours.out_dir, inputs=input_files(config))
        folder.check(force=ours.force, command=command)
        with folder.locked():
            folder.check(force=ours.force, command=command)  # again, now that we hold it
            return _solve(config, folder, force=ours.force, echo=ours.echo)


def _cases(config: Config, solution: Solution) -> list[tuple[dict | None, Solution]]:
    """``[(load case table, its solution), ...]``, or ``[(None, solution)]`` without
    ``[[load_cases]]``."""
    cases = config.data.get("load_cases") or []
    if not cases:
        return [(None, solution)]
    return [(case, case_state(solution, i)) for i, case in enumerate(cases)]


def _suffixed(data: dict, case: dict | None) -> dict:
    """Output fields renamed ``<field>_<case name>`` (unchanged without a case)."""
    return data if case is None else {f"{name}_{case['name']}": v for name, v in data.items()}


def _solve(config: Config, folder: ResultsFolder, *, force: bool,
           echo: Callable[[str], None]) -> dict:
    from fesens.workflow.incremental import solve_increments
    from fesens.workflow.time_analysis import is_time_dependent, solve_in_time

    if is_incremental(config.data):  # the module imports this one
        return solve_increments(config, folder, force=force, echo=echo)
    if is_time_dependent(config):  # the module imports this one
        return solve_in_time(config, folder, force=force, echo=echo)
    model, solution = compute_solution(config, folder, force=force, echo=echo)
    folder.prepare(clear=force)
    cases = solved_cases(config, solution)
    summary = report_solve(config, model, solution, cases, echo)
    write_solution(config, folder, model, solution, cases, summary, echo)
    return summary


def compute_solution(config: Config, folder: ResultsFolder, *, force: bool,
                     echo: Callable[[str], None]) -> tuple[LinearModel, Solution]:
    """``(model, solution)`` of the config's static solve with full material. A Newton
    solve that fails writes its last converged state to ``folder`` and raises."""
    model = build_model(config)
    backend, options = _solver(config)
    try:
        return model, model.solve(solver=backend, solver_options=options,
                                  **solve_inputs(config))
    except NewtonError as exc:  # keep what converged; the error names where it is
        folder.prepare(clear=force)
        write_last_converged(config, model, exc, folder, echo)
        raise


def solved_cases(config: Config, solution: Solution) -> list[tuple[dict | None, Solution,
                                                                    tuple[dict, dict], dict]]:
    """Per load case (one ``None`` case without ``[[load_cases]]``): the case's table, its
    solution, its output fields ``(point_data, cell_data)`` and its numbers (compliance,
    the reactions on each support, the physics' reported values)."""
    fragment, solved = config.physics_class.config, []
    for case, single in _cases(config, solution):
        fields = _output_fields(single)
        reactions = {}
        for i, support in enumerate(config.data["supports"]):
            where = selections.nodes(join("supports", i), support, config.mesh, config.label)
            reactions[_support_label(support, i)] = single.reaction_force(where).tolist()
        solved.append((case, single, fields, {"compliance": single.compliance(),
                                              "reactions": reactions,
                                              **reported_values(fragment, *fields)}))
    return solved


def report_solve(config: Config, model, solution: Solution, cases: list,
                 echo: Callable[[str], None]) -> dict:
    """The summary of ``solution.json``, its lines printed: the solver, a nonlinear
    solve's Newton report and load levels, each case's numbers and reactions."""
    if model.solver_choice is not None:  # what "auto" chose, and why
        echo(model.solver_choice.line())
    backend, options = _solver(config)
    nonlinear = is_nonlinear(config.physics_class)
    results = [numbers for *_, numbers in cases]
    summary = {"name": config.name, "physics": config.physics, "dofs": model.dofmap.n_dofs,
               **_solve_numbers(config, results),
               "solver": (tangent_solver_name(model, backend, options) if nonlinear else
                          str(model.solver_choice or solver_class(backend).name)),
               "fesens_version": __version__}
    if nonlinear:
        newton = summary["newton"] = newton_summary(solution.report)
        echo(f"Newton: {newton['steps']} load step(s), {newton['iterations']} iteration(s), "
             f"{len(newton['cutbacks'])} cut-back(s)"
             + (f", {newton['fallbacks']} of {newton['factorizations']} tangent "
                f"factorization(s) fell back: {newton['fallback_reason']}"
                if newton["fallbacks"] else ""))
        levels = objective_levels(config, solution, np.ones(config.mesh.n_cells), echo)
        if levels:
            summary["objective"] = {"type": config.data["objective"]["type"], **levels}
    fragment = config.physics_class.config
    if cases[0][0] is not None:
        echo(f"{config.name}: {model.describe()}; {len(cases)} load cases, "
             f"{fragment.compliance_name} {summary['compliance']:.6g} "
             f"({'the largest' if summary['combine'] == 'max' else 'weighted sum'})")
    for case, _, _, result in cases:
        label = "" if case is None else f"case {case['name']}: "
        start = f"{config.name}: {model.describe()}; " if case is None else f"  {label}"
        echo(f"{start}{fragment.compliance_name} {result['compliance']:.6g}"
             + "".join(f", {item.label} {result[item.key]:.4g}" for item in fragment.reported))
        for support, force_vector in result["reactions"].items():
            echo(f"{'  ' if case else ''}reaction on {support}"
                 f"{'' if case is None else ' (' + case['name'] + ')'}: "
                 f"{', '.join(f'{v:.6g}' for v in force_vector)}")
    return summary


def write_solution(config: Config, folder: ResultsFolder, model, solution: Solution,
                   cases: list, summary: dict, echo: Callable[[str], None]) -> None:
    """``solution.vtu`` (each case's fields, ``<field>_<case>``), the 2D pictures, a
    nonlinear solve's load path, ``solution.json``."""
    point_data, cell_data, pngs = {}, {}, []
    for case, single, fields, _ in cases:
        point_data.update(_suffixed(fields[0], case))
        cell_data.update(_suffixed(fields[1], case))
        name = "solution" if case is None else f"solution_{case['name']}"
        png = _solution_png(config, single, fields, folder.file(f"{name}.png"),
                            "" if case is None else case["name"])
        pngs += [] if png is None else [png.name]
    write_mesh(folder.file("solution.vtu"), config.mesh, point_data=point_data,
               cell_data=cell_data)
    if is_nonlinear(config.physics_class):
        pngs += write_load_path(config, model, solution, folder)
    folder.write_json("solution.json", summary)
    echo(f"results in {folder.path}: " + ", ".join(["solution.vtu", "solution.json", *pngs]))


def _solve_numbers(config: Config, results: list[dict]) -> dict:
    """The numbers of ``solution.json``: compliance, reactions and the physics' reported
    values; with load cases, ``cases`` (each case's, with its name, weight and loads),
    ``combine`` and the combined compliance (weighted sum or largest)."""
    cases = config.data.get("load_cases") or []
    if not cases:
        return results[0]
    combine = combination(config.data)
    return {"compliance": combined_value([r["compliance"] for r in results], cases, combine),
            "combine": combine,
            "cases": [{"name": case["name"], "weight": case["weight"], "loads": case["loads"],
                       **result} for case, result in zip(cases, results, strict=True)]}


def _solver(config: Config) -> tuple[str, dict]:
    solver = config.data["solver"]
    return solver["backend"], dict(solver["options"])


def objective_spec(config: Config, name: str | None) -> dict:
    """The resolved objective table for ``--objective NAME``: the config's ``[objective]``
    when it has that type (or no name is given), else the type's defaults."""
    given = config.data.get("objective")
    if name is None:
        name = given["type"] if given else "compliance"
    offered = tuple(config.physics_class.config.responses)
    if name not in offered:
        raise ConfigError(f"--objective {name!r} cannot be differentiated by `fesens "
                          f"sensitivity` for {config.physics}; choose one of "
                          f"{', '.join(offered)}")
    if given and given["type"] == name:
        return given
    try:
        return check_typed("objective", {"type": name}, response_variants(config.physics))
    except ConfigError as err:
        raise ConfigError(f"--objective {name}: {err}; give its parameters in the config's "
                          f"[objective] table (type = \"{name}\")") from None


def wrt_inputs(wrt: str, parameter) -> dict:
    """Deprecated: the record's ``keywords``, :func:`fesens.workflow.targets.target`."""
    warnings.warn("wrt_inputs is deprecated; use fesens.workflow.targets.target(physics, "
                  "wrt).keywords(parameter)", DeprecationWarning, stacklevel=2)
    return targets()[wrt].keywords(parameter)


def wrt_point(config: Config, model, wrt: str, rho: np.ndarray):
    """Deprecated: the record's ``start``, :func:`fesens.workflow.targets.target`."""
    warnings.warn("wrt_point is deprecated; use fesens.workflow.targets.target(physics, "
                  "wrt).start(config, model, rho)", DeprecationWarning, stacklevel=2)
    return target(config.physics_class, wrt).start(config, model, rho)


def run_sensitivity(config: Config, out: str | Path, *, wrt: str, objective: str | None = None,
                    design: str | Path | None = None, force: bool = False,
                    echo: Callable[[str], None] = print,
                    command: str = "fesens sensitivity", check: bool = False,
                    check_seed: int | None = None) -> dict:
    """Gradient of an objective with respect to a cell field (the density or a per-cell
    parameter of the physics, :func:`wrt_choices`) or to the load magnitudes, by one adjoint
    solve, at a design.

    The stiffness scale is the config's material interpolation (``[penalization]``, at its
    final penalty) of the density: of the design in ``design`` (a results folder, its
    ``design.vtu`` or ``checkpoint.npz``, :mod:`fesens.workflow.design_input`), else of
    full material. Without a ``[penalization]`` table the density is the stiffness scale.
    ``--wrt density`` differentiates through the interpolation, as the optimizer does.

    Writes ``sensitivity.vtu`` (the gradient as cell data, with the solution),
    ``sensitivity.json``, and ``sensitivity.csv`` for loads or ``sensitivity.png`` for a
    2D field. Returns the JSON summary.

    With ``check`` the gradient is checked on the config's objective itself
    (:mod:`fesens.workflow.gradient_check`, along a random direction of seed
    ``check_seed``, a fresh one by default): printed, and under ``check`` in the summary.
    """
    with rank_output(Path(out), force=force, resume=False, echo=echo) as ours:
        folder = ResultsFolder(ours.out_dir, inputs=input_files(
            config, design, None if design is None else Path(design) / "design.vtu"))
        folder.check(force=ours.force, command=command)
        with folder.locked():
            folder.check(force=ours.force, command=command)  # again, now that we hold it
            return _sensitivity(config, folder, wrt=wrt, objective=objective, design=design,
                                force=ours.force, echo=ours.echo, check=check,
                                check_seed=check_seed)


def _interpolation_label(interpolation) -> str:
    if interpolation is None:
        return "none (the density is the stiffness scale)"
    return f"{interpolation.name} {interpolation.parameter:g}"


@dataclass
class Sensitivity:
    """What one ``fesens sensitivity`` computed: the objective ``spec`` its ``evaluation``
    differentiated with respect to ``target`` at ``at`` (the density of ``design``), its
    ``value`` and ``gradient`` (of the combined load cases, each case's in ``case_values``
    and ``case_gradients``, None without load cases), the static ``solution`` (None for a
    run or a frequency response) and the differentiated function ``objective_of`` (for
    ``--check``)."""

    spec: dict
    evaluation: ConfigEvaluation
    target: WRT
    design: object
    at: object
    value: float
    gradient: object
    case_values: list[float] | None
    case_gradients: list | None
    solution: Solution | None
    objective_of: Callable


def compute_sensitivity(config: Config, *, wrt: str, objective: str | None,
                        design: str | Path | None) -> Sensitivity:
    """The objective ``--objective objective`` and its gradient with respect to ``--wrt
    wrt`` at the density of ``design`` (full material when None), by one adjoint solve
    (one sweep per load case)."""
    spec = objective_spec(config, objective)
    evaluation = ConfigEvaluation(config, [spec])
    model = evaluation.model
    chosen = target(config.physics_class, wrt)
    backend, options = _solver(config)
    chosen.check(config, model, analysis_type(config.data), wants_matrix_free(backend, options))
    at_design = full_material(config) if design is None else read_design(config, design)
    rho, cases = at_design.density, evaluation.cases
    captured = {}

    def objective_of(parameter):
        density, keywords = chosen.evaluation_inputs(parameter, rho)
        values, captured["state"] = evaluation.values_and_state(density, **keywords)
        return values[0]

    at = chosen.start(config, model, rho)
    try:
        values, pullback = vjp(objective_of, at)
    except NewtonError as exc:  # as in `fesens solve`: the message names the keys to change
        add_config_hint(exc)
        raise
    case_values = case_gradients = None
    if cases:  # one adjoint sweep per case, on the one factorization
        case_values = [float(v) for v in values]
        case_gradients = [pullback(np.eye(len(cases))[i]) for i in range(len(cases))]
        value, gradient = _combined(config, case_values, case_gradients)
    else:
        value, gradient = float(values), pullback(np.ones(()))
    state = captured["state"]
    return Sensitivity(spec, evaluation, chosen, at_design, at, value, gradient, case_values,
                       case_gradients, None if state is None else state.detached(),
                       objective_of)


def report_sensitivity(config: Config, result: Sensitivity,
                       echo: Callable[[str], None]) -> dict:
    """The summary of ``sensitivity.json`` (without ``check``), its lines printed: the
    objective and where it was evaluated, its load levels and load cases, the gradient's
    numbers (:attr:`WRT.output`)."""
    from fesens.workflow.time_analysis import analysis_summary  # it imports this module

    spec, evaluation, solution = result.spec, result.evaluation, result.solution
    if solution is None:  # a run or a frequency response: no one solution
        about, count = analysis_summary(config, evaluation)
    else:
        about, count = {"solver": str(evaluation.model.solver_choice or solver_class(
            config.data["solver"]["backend"]).name)}, ""
    summary = {"name": config.name, "objective": spec["type"], "value": result.value,
               "wrt": result.target.name, **about, "design": result.design.source,
               "interpolation": _interpolation_label(evaluation.interpolation),
               "fesens_version": __version__}
    echo(f"{config.name}: {spec['type']}{count} at {result.design.source}, interpolation "
         f"{summary['interpolation']}")
    if solution is not None and spec is config.data.get("objective"):  # its load levels
        summary.update(objective_levels(config, solution, result.design.density, echo))
    if result.case_values is not None:
        cases = evaluation.cases
        summary["combine"] = combination(config.data)
        summary["cases"] = [{"name": case["name"], "weight": case["weight"], "value": v}
                            for case, v in zip(cases, result.case_values, strict=True)]
        echo(f"{spec['type']} per load case: " + ", ".join(
            f"{case['name']} {v:.6g}" for case, v in zip(cases, result.case_values,
                                                           strict=True))
             + f"; combined ({summary['combine']}): {result.value:.6g}")
    result.target.output.report(config, summary, result.at, result.gradient,
                                result.case_gradients, echo)
    return summary


def write_sensitivity(config: Config, folder: ResultsFolder, result: Sensitivity,
                      summary: dict, *, echo: Callable[[str], None], check: bool = False,
                      check_seed: int | None = None) -> None:
    """``sensitivity.vtu`` (the density, the solution and the gradient's fields), the
    target's own files, then with ``check`` the gradient check (its numbers under
    ``check`` in ``summary``) and ``sensitivity.json``."""
    cell_data, point_data = {"density": result.design.density}, {}
    for case, single in [] if result.solution is None else _cases(config, result.solution):
        point_data.update(_suffixed(single.point_data(), case))
        cell_data.update(_suffixed(single.cell_data(), case))
    output = result.target.output
    fields = output.write(config, folder, summary, result.gradient, result.case_gradients)
    {"cell": cell_data, "point": point_data}.get(output.location, {}).update(fields)
    write_mesh(folder.file("sensitivity.vtu"), config.mesh, point_data=point_data,
               cell_data=cell_data)
    if check:  # after the solution is written: the check's solves replace the captured one
        summary["check"] = check_sensitivity(config, result.objective_of, result.at,
                                             result.gradient, wrt=result.target,
                                             seed=check_seed, echo=echo)
    folder.write_json("sensitivity.json", summary)
    echo(f"results in {folder.path}: " + ", ".join(sorted(
        p.name for p in folder.path.iterdir() if p.name.startswith("sensitivity"))))


def _sensitivity(config: Config, folder: ResultsFolder, *, wrt: str, objective: str | None,
                 design: str | Path | None, force: bool, echo: Callable[[str], None],
                 check: bool = False, check_seed: int | None = None) -> dict:
    result = compute_sensitivity(config, wrt=wrt, objective=objective, design=design)
    folder.prepare(clear=force)
    summary = report_sensitivity(config, result, echo)
    write_sensitivity(config, folder, result, summary, echo=echo, check=check,
                      check_seed=check_seed)
    return summary


def _combined(config: Config, values: list[float], gradients: list) -> tuple[float, object]:
    """The objective of the load cases and its gradient: the weighted sum of the cases'
    (gradients as arrays or ``{load: derivative}``), or with ``combine = "max"`` the largest
    case's (a subgradient where cases tie)."""
    cases, combine = config.data["load_cases"], combination(config.data)
    value = combined_value(values, cases, combine)
    if combine == "max":
        return value, gradients[int(np.argmax(values))]
    weights = [case["weight"] for case in cases]
    if isinstance(gradients[0], dict):
        return value, {name: sum(w * g[name] for w, g in zip(weights, gradients, strict=True))
                       for name in gradients[0]}
    return value, sum(w * np.asarray(g, dtype=float)
                      for w, g in zip(weights, gradients, strict=True))
