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

from collections.abc import Callable
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
from fesens.config.load_cases import combination, combined_value
from fesens.config.nonlinear import is_nonlinear
from fesens.config.physics_keys import response_variants
from fesens.config.time_sections import STATIC, analysis_type
from fesens.errors import NewtonError
from fesens.fem.model.linear import LinearModel
from fesens.fem.model.matrix_free import folded_weights, wants_matrix_free
from fesens.fem.model.parameters import SCALE
from fesens.fem.model.solution import Solution
from fesens.mesh import write_mesh
from fesens.opt import case_state
from fesens.output import ResultsFolder, sensitivity_name
from fesens.physics import PHYSICS
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


def wrt_choices(physics: type[LinearModel] | None = None) -> tuple[str, ...]:
    """``--wrt`` choices: ``density`` (the solve's ``scale``), the per-cell parameters of
    ``physics`` (of every registered physics when None), ``loads`` (the load magnitudes),
    ``points`` (the node coordinates: shape sensitivities)."""
    classes = PHYSICS if physics is None else (physics,)
    names = dict.fromkeys(name for cls in classes for name, parameter in cls.parameters.items()
                          if parameter.per_cell and name != SCALE.name)
    return ("density", *names, "loads", "points")


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
    from fesens.workflow.time_analysis import is_time_dependent, solve_in_time

    if is_time_dependent(config):  # the module imports this one
        return solve_in_time(config, folder, force=force, echo=echo)
    model = build_model(config)
    backend, options = _solver(config)
    nonlinear = is_nonlinear(config.physics_class)
    try:
        solution = model.solve(solver=backend, solver_options=options,
                               **solve_inputs(config))
    except NewtonError as exc:  # keep what converged; the error names where it is
        folder.prepare(clear=force)
        write_last_converged(config, model, exc, folder, echo)
        raise
    if model.solver_choice is not None:  # what "auto" chose, and why
        echo(model.solver_choice.line())
    folder.prepare(clear=force)
    fragment = config.physics_class.config
    point_data, cell_data, results, pngs = {}, {}, [], []
    for case, single in _cases(config, solution):
        fields = _output_fields(single)
        point_data.update(_suffixed(fields[0], case))
        cell_data.update(_suffixed(fields[1], case))
        name = "solution" if case is None else f"solution_{case['name']}"
        png = _solution_png(config, single, fields, folder.file(f"{name}.png"),
                            "" if case is None else case["name"])
        pngs += [] if png is None else [png.name]
        reactions = {}
        for i, support in enumerate(config.data["supports"]):
            where = selections.nodes(join("supports", i), support, config.mesh, config.label)
            reactions[_support_label(support, i)] = single.reaction_force(where).tolist()
        results.append({"compliance": single.compliance(), "reactions": reactions,
                        **reported_values(fragment, *fields)})
    write_mesh(folder.file("solution.vtu"), config.mesh, point_data=point_data,
               cell_data=cell_data)
    summary = {"name": config.name, "physics": config.physics, "dofs": model.dofmap.n_dofs,
               **_solve_numbers(config, results),
               "solver": (tangent_solver_name(model, backend, options) if nonlinear else
                          str(model.solver_choice or solver_class(backend).name)),
               "fesens_version": __version__}
    if nonlinear:
        summary["newton"] = newton_summary(solution.report)
        pngs += write_load_path(config, model, solution, folder)
        echo(f"Newton: {summary['newton']['steps']} load step(s), "
             f"{summary['newton']['iterations']} iteration(s), "
             f"{len(summary['newton']['cutbacks'])} cut-back(s)"
             + (f", {summary['newton']['fallbacks']} of {summary['newton']['factorizations']}"
                f" tangent factorization(s) fell back: {summary['newton']['fallback_reason']}"
                if summary["newton"]["fallbacks"] else ""))
        levels = objective_levels(config, solution, np.ones(config.mesh.n_cells), echo)
        if levels:
            summary["objective"] = {"type": config.data["objective"]["type"], **levels}
    cases = config.data.get("load_cases") or []
    if cases:
        echo(f"{config.name}: {model.describe()}; {len(cases)} load cases, "
             f"{fragment.compliance_name} {summary['compliance']:.6g} "
             f"({'the largest' if summary['combine'] == 'max' else 'weighted sum'})")
    for case, result in zip(cases or [None], results, strict=True):
        label = "" if case is None else f"case {case['name']}: "
        start = f"{config.name}: {model.describe()}; " if case is None else f"  {label}"
        echo(f"{start}{fragment.compliance_name} {result['compliance']:.6g}"
             + "".join(f", {item.label} {result[item.key]:.4g}" for item in fragment.reported))
        for support, force_vector in result["reactions"].items():
            echo(f"{'  ' if case else ''}reaction on {support}"
                 f"{'' if case is None else ' (' + case['name'] + ')'}: "
                 f"{', '.join(f'{v:.6g}' for v in force_vector)}")
    folder.write_json("solution.json", summary)
    echo(f"results in {folder.path}: " + ", ".join(["solution.vtu", "solution.json", *pngs]))
    return summary


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


def _wrt_check(config: Config, model, wrt: str) -> None:
    allowed = wrt_choices(config.physics_class)
    if wrt not in allowed:
        raise ConfigError(f"--wrt {wrt} does not apply to {config.physics} (choose one of "
                          f"{', '.join(allowed)})")
    if wrt == "loads" and not model.loads:
        raise ConfigError("--wrt loads: the config defines no loads")
    backend, options = _solver(config)
    if analysis_type(config.data) == STATIC and wants_matrix_free(backend, options) \
            and _needs_assembly(config, model, wrt):
        raise ConfigError(f"--wrt {wrt} needs the assembled stiffness, which "
                          f"solver.options.matrix_free = true never forms (it solves one "
                          f"per-cell field on the mesh's own coordinates): give "
                          f"solver.options.matrix_free = false, or another --wrt")


def _needs_assembly(config: Config, model, wrt: str) -> bool:
    """Whether the static solve of ``--wrt wrt`` leaves the matrix-free path: the node
    coordinates move, or the parameter per cell makes the stiffness several fields."""
    if wrt in ("points", "density", "loads"):
        return wrt == "points"
    fields = model.stiffness_fields(**{wrt: wrt_point(config, model, wrt, None)})
    return folded_weights(model, fields[0]) is None


def wrt_inputs(wrt: str, parameter) -> dict:
    """The keywords of :meth:`~fesens.config.evaluation.ConfigEvaluation.values` that
    ``--wrt`` sets to ``parameter`` (the density is its first argument)."""
    if wrt in ("loads", "points"):
        return {wrt: parameter}
    return {} if wrt == "density" else {"parameters": {wrt: parameter}}


def wrt_point(config: Config, model, wrt: str, rho: np.ndarray):
    """Where ``--wrt`` differentiates: every load's magnitude factor 1, the density
    ``rho``, the node coordinates, or a per-cell parameter's config value."""
    if wrt == "loads":
        return {name: 1.0 for name in model.loads}
    if wrt == "density":
        return rho.copy()
    if wrt == "points":
        return config.mesh.points.copy()
    # the model keeps a parameter's value under its name (fesens.physics.spec)
    return np.broadcast_to(np.asarray(getattr(model, wrt), dtype=float),
                           (config.mesh.n_cells,)).copy()


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


def _sensitivity(config: Config, folder: ResultsFolder, *, wrt: str, objective: str | None,
                 design: str | Path | None, force: bool, echo: Callable[[str], None],
                 check: bool = False, check_seed: int | None = None) -> dict:
    from fesens.workflow.time_analysis import analysis_summary  # it imports this module

    spec = objective_spec(config, objective)
    evaluation = ConfigEvaluation(config, [spec])
    model, interpolation = evaluation.model, evaluation.interpolation
    _wrt_check(config, model, wrt)
    at_design = full_material(config) if design is None else read_design(config, design)
    rho = at_design.density
    cases = evaluation.cases
    captured = {}

    def objective_of(parameter):
        values, captured["state"] = evaluation.values_and_state(
            parameter if wrt == "density" else rho, **wrt_inputs(wrt, parameter))
        return values[0]

    at = wrt_point(config, model, wrt, rho)
    try:
        values, pullback = vjp(objective_of, at)
    except NewtonError as exc:  # as in `fesens solve`: the message names the keys to change
        add_config_hint(exc)
        raise
    if cases:  # one adjoint sweep per case, on the one factorization
        case_values = [float(v) for v in values]
        case_gradients = [pullback(np.eye(len(cases))[i]) for i in range(len(cases))]
        value, gradient = _combined(config, case_values, case_gradients)
    else:
        value, gradient = float(values), pullback(np.ones(()))
    folder.prepare(clear=force)
    if captured["state"] is None:  # a run or a frequency response: no one solution
        solution, (about, count) = None, analysis_summary(config, evaluation)
    else:
        solution, count = captured["state"].detached(), ""
        about = {"solver": str(model.solver_choice
                               or solver_class(config.data["solver"]["backend"]).name)}
    summary = {"name": config.name, "objective": spec["type"], "value": value, "wrt": wrt,
               **about, "design": at_design.source,
               "interpolation": _interpolation_label(interpolation),
               "fesens_version": __version__}
    echo(f"{config.name}: {spec['type']}{count} at {at_design.source}, interpolation "
         f"{summary['interpolation']}")
    if solution is not None and spec is config.data.get("objective"):  # its load levels
        summary.update(objective_levels(config, solution, rho, echo))
    field_name = sensitivity_name(spec["type"], wrt)
    cell_data, point_data = {"density": rho}, {}
    for case, single in [] if solution is None else _cases(config, solution):
        point_data.update(_suffixed(single.point_data(), case))
        cell_data.update(_suffixed(single.cell_data(), case))
    if cases:
        summary["combine"] = combination(config.data)
        summary["cases"] = [{"name": case["name"], "weight": case["weight"], "value": v}
                            for case, v in zip(cases, case_values, strict=True)]
        echo(f"{spec['type']} per load case: " + ", ".join(
            f"{case['name']} {v:.6g}" for case, v in zip(cases, case_values, strict=True))
             + f"; combined ({summary['combine']}): {value:.6g}")
    if wrt == "loads":
        _load_sensitivities(config, folder, summary, at, gradient,
                            case_gradients if cases else None, echo)
    elif wrt == "points":
        point_data.update(_point_sensitivities(config, folder, summary, field_name, gradient,
                                               case_gradients if cases else None, echo))
    else:
        cell_data.update(_field_sensitivities(config, folder, summary, field_name, gradient,
                                              case_gradients if cases else None, echo))
    write_mesh(folder.file("sensitivity.vtu"), config.mesh, point_data=point_data,
               cell_data=cell_data)
    if check:  # after the solution is written: the check's solves replace the captured one
        summary["check"] = check_sensitivity(config, objective_of, at, gradient, wrt=wrt,
                                             seed=check_seed, echo=echo)
    folder.write_json("sensitivity.json", summary)
    echo(f"results in {folder.path}: " + ", ".join(sorted(
        p.name for p in folder.path.iterdir() if p.name.startswith("sensitivity"))))
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


def _load_sensitivities(config, folder, summary, at, gradient, case_gradients, echo) -> None:
    """``sensitivity.csv`` and the summary's ``loads``: per load, the derivative of the
    objective (and of each case's, ``derivative_<case>``) with respect to its magnitude."""
    cases = config.data.get("load_cases") or []
    rows = []
    for name in at:
        row = {"name": name, "magnitude": at[name], "derivative": float(gradient[name])}
        for case, per_case in zip(cases, case_gradients or [], strict=True):
            row[f"derivative_{case['name']}"] = float(per_case[name])
        rows.append(row)
    summary["loads"] = rows
    columns = list(rows[0])
    folder.write_text("sensitivity.csv", ",".join(columns) + "\n" + "".join(
        ",".join(str(r[c]) if c == "name" else repr(r[c]) for c in columns) + "\n"
        for r in rows))
    echo(f"{summary['objective']} = {summary['value']:.6g}; derivatives with respect to the "
         "load magnitudes:")
    for row in rows:
        echo(f"  {row['name']}: {row['derivative']:.6g}")


def _gradient_numbers(field: str, gradient: np.ndarray) -> dict:
    return {"field": field, "min": float(gradient.min()), "max": float(gradient.max()),
            "sum": float(gradient.sum()), "norm": float(np.linalg.norm(gradient))}


def _point_sensitivities(config, folder, summary, field_name, gradient, case_gradients,
                         echo) -> dict:
    """Shape sensitivities: the gradient with respect to the node coordinates as point data
    ``(n_points, dim)`` (the combined one, and one per load case), its numbers in the summary
    and, in 2D, ``sensitivity.png`` of its magnitude per node."""
    objective = summary["objective"]
    gradient = np.asarray(gradient, dtype=float)
    fields = {field_name: gradient}
    summary["gradient"] = _gradient_numbers(field_name, gradient)
    for case, entry, per_case in zip(config.data.get("load_cases") or [],
                                     summary.get("cases", []), case_gradients or [],
                                     strict=True):
        name = sensitivity_name(f"{objective}_{case['name']}", "points")
        fields[name] = np.asarray(per_case, dtype=float)
        entry["gradient"] = _gradient_numbers(name, fields[name])
    magnitude = np.linalg.norm(gradient, axis=1)
    if config.dim == 2:
        plot_nodal_field(config.mesh, magnitude, folder.file("sensitivity.png"),
                         title=f"{config.name}: |d {objective} / d x| per node",
                         label=f"|{field_name}|", clip_percentile=99.0)
    node = int(np.argmax(magnitude))
    where = ", ".join(f"{c:.4g}" for c in config.mesh.points[node])
    echo(f"{objective} = {summary['value']:.6g}; d/d(node coordinates): largest "
         f"{magnitude[node]:.4g} at node {node} ({where}), norm "
         f"{np.linalg.norm(gradient):.6g}")
    return fields


def _field_sensitivities(config, folder, summary, field_name, gradient, case_gradients,
                         echo) -> dict:
    """The gradient's cell fields (the combined one, and ``d_<objective>_<case>_d_<wrt>``
    per load case), its numbers in the summary and, in 2D, ``sensitivity.png``."""
    objective, wrt = summary["objective"], summary["wrt"]
    gradient = np.asarray(gradient, dtype=float)
    fields = {field_name: gradient}
    summary["gradient"] = _gradient_numbers(field_name, gradient)
    for case, entry, per_case in zip(config.data.get("load_cases") or [],
                                     summary.get("cases", []), case_gradients or [],
                                     strict=True):
        name = sensitivity_name(f"{objective}_{case['name']}", wrt)
        fields[name] = np.asarray(per_case, dtype=float)
        entry["gradient"] = _gradient_numbers(name, fields[name])
    if config.dim == 2:
        plot_cell_field(config.mesh, gradient, folder.file("sensitivity.png"),
                        title=f"{config.name}: d {objective} / d {wrt}",
                        label=field_name, cmap="viridis", color_scale="symlog",
                        clip_percentile=99.0)
    echo(f"{objective} = {summary['value']:.6g}; d/d{wrt}: min {gradient.min():.4g}, max "
         f"{gradient.max():.4g}, sum {gradient.sum():.6g}")
    return fields
