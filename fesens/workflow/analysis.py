"""``fesens solve`` and ``fesens sensitivity``: one forward solve (and one adjoint) of the
model a config describes. ``solve`` uses the full material everywhere; ``sensitivity`` the
full material or a design (``--design``) through the config's material interpolation.
The other optimization sections of the config are ignored (a checkpoint design reads its
filter and projection).

What is plotted and reported, which objectives can be differentiated and with respect to
what, is read from the physics' configuration fragment (:mod:`fesens.physics.spec`) and its
parameters, through the registry.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from fesens import __version__
from fesens.ad import getval, value_and_grad
from fesens.adjoint import Differentiable
from fesens.config import (
    Config,
    ConfigError,
    build_interpolation,
    build_model,
    response,
    selections,
)
from fesens.config.build import solver_argument
from fesens.config.checks import check_typed, join
from fesens.config.physics_keys import response_variants
from fesens.fem.model import LinearModel
from fesens.fem.parameters import SCALE
from fesens.fem.solution import Solution
from fesens.mesh import write_mesh
from fesens.output import ResultsFolder, sensitivity_name
from fesens.physics import PHYSICS
from fesens.plotting import plot_cell_field
from fesens.solvers import solver_class
from fesens.workflow.common import reported_values
from fesens.workflow.design_input import full_material, read_design


def wrt_choices(physics: type[LinearModel] | None = None) -> tuple[str, ...]:
    """``--wrt`` choices: ``density`` (the solve's ``scale``), the per-cell parameters of
    ``physics`` (of every registered physics when None), ``loads`` (the load magnitudes)."""
    classes = PHYSICS if physics is None else (physics,)
    names = dict.fromkeys(name for cls in classes for name, parameter in cls.parameters.items()
                          if parameter.per_cell and name != SCALE.name)
    return ("density", *names, "loads")


def _support_label(support: dict, index: int) -> str:
    return support.get("group") or f"supports[{index}]"


def _output_fields(solution: Solution) -> tuple[dict, dict]:
    """``(point_data, cell_data)`` of a solution as plain arrays."""
    return ({k: np.asarray(getval(v)) for k, v in solution.point_data().items()},
            {k: np.asarray(getval(v)) for k, v in solution.cell_data().items()})


def _solution_png(config: Config, solution: Solution, fields: tuple[dict, dict],
                  path: Path) -> Path | None:
    """The physics' picture (:class:`~fesens.physics.spec.Plot`) of a 2D solution."""
    plot, mesh = config.physics_class.config.plot, config.mesh
    if mesh.dim != 2 or plot is None:
        return None
    point_data, cell_data = fields
    if plot.field in cell_data:
        values = cell_data[plot.field]
    else:  # a nodal scalar, averaged over each cell's nodes
        values = np.reshape(point_data[plot.field], (mesh.n_points, -1))[mesh.cells, 0]
        values = values.mean(axis=1)
    displacement = np.asarray(getval(solution.field)) if plot.deformed else None
    return plot_cell_field(mesh, values, path, displacement=displacement,
                           title=f"{config.name}: {plot.title}", label=plot.label,
                           cmap="inferno", clip_percentile=plot.clip_percentile)


def run_solve(config: Config, out: str | Path, *, force: bool = False,
              echo: Callable[[str], None] = print, command: str = "fesens solve") -> dict:
    """Solve the config's model; write ``solution.vtu``, ``solution.json`` (and
    ``solution.png`` in 2D) to ``out``. Returns the JSON summary."""
    folder = ResultsFolder(out)
    folder.check(force=force, command=command)
    with folder.locked():
        folder.check(force=force, command=command)  # again, now that we hold it
        return _solve(config, folder, force=force, echo=echo)


def _solve(config: Config, folder: ResultsFolder, *, force: bool,
           echo: Callable[[str], None]) -> dict:
    model = build_model(config)
    backend, options = _solver(config)
    solution = model.solve(solver=backend, solver_options=options)
    if model.solver_choice is not None:  # what "auto" chose, and why
        echo(model.solver_choice.line())
    folder.prepare(clear=force)
    solution.write(folder.file("solution.vtu"))
    fields = _output_fields(solution)
    png = _solution_png(config, solution, fields, folder.file("solution.png"))
    reactions = {}
    for i, support in enumerate(config.data["supports"]):
        where = selections.nodes(join("supports", i), support, config.mesh, config.label)
        reactions[_support_label(support, i)] = solution.reaction_force(where).tolist()
    summary = {"name": config.name, "physics": config.physics,
               "dofs": model.dofmap.n_dofs, "compliance": solution.compliance(),
               "reactions": reactions,
               "solver": str(model.solver_choice or solver_class(backend).name),
               "fesens_version": __version__}
    fragment = config.physics_class.config
    summary.update(reported_values(fragment, *fields))
    echo(f"{config.name}: {model.describe()}; {fragment.compliance_name} "
         f"{summary['compliance']:.6g}"
         + "".join(f", {item.label} {summary[item.key]:.4g}" for item in fragment.reported))
    for label, force_vector in reactions.items():
        echo(f"reaction on {label}: {', '.join(f'{v:.6g}' for v in force_vector)}")
    folder.write_json("solution.json", summary)
    echo(f"results in {folder.path}: solution.vtu, solution.json"
         + (", solution.png" if png is not None else ""))
    return summary


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


def run_sensitivity(config: Config, out: str | Path, *, wrt: str, objective: str | None = None,
                    design: str | Path | None = None, force: bool = False,
                    echo: Callable[[str], None] = print,
                    command: str = "fesens sensitivity") -> dict:
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
    """
    folder = ResultsFolder(out)
    folder.check(force=force, command=command)
    with folder.locked():
        folder.check(force=force, command=command)  # again, now that we hold it
        return _sensitivity(config, folder, wrt=wrt, objective=objective, design=design,
                            force=force, echo=echo)


def _interpolation_label(interpolation) -> str:
    if interpolation is None:
        return "none (the density is the stiffness scale)"
    return f"{interpolation.name} {interpolation.parameter:g}"


def _sensitivity(config: Config, folder: ResultsFolder, *, wrt: str, objective: str | None,
                 design: str | Path | None, force: bool, echo: Callable[[str], None]) -> dict:
    spec = objective_spec(config, objective)
    model = build_model(config)
    _wrt_check(config, model, wrt)
    at_design = full_material(config) if design is None else read_design(config, design)
    interpolation = build_interpolation(config)
    problem = Differentiable(model, solver_argument(config))
    J = response(spec, config)
    rho = at_design.density
    captured = {}

    def stiffness_scale(density):
        return density if interpolation is None else interpolation(density)

    def objective_of(parameter):
        if wrt == "density":
            state = problem.solve(**{SCALE.name: stiffness_scale(parameter)})
            captured["state"] = state
            return J(state, parameter)
        keyword = "loads" if wrt == "loads" else wrt
        state = problem.solve(**{SCALE.name: stiffness_scale(rho), keyword: parameter})
        captured["state"] = state
        return J(state, rho)

    if wrt == "loads":
        at = {name: 1.0 for name in model.loads}
    elif wrt == "density":
        at = rho.copy()
    else:  # the model keeps a parameter's value under its name (fesens.physics.spec)
        at = np.broadcast_to(np.asarray(getattr(model, wrt), dtype=float),
                             (config.mesh.n_cells,)).copy()
    value, gradient = value_and_grad(objective_of)(at)
    value = float(value)
    solution = captured["state"].detached()
    folder.prepare(clear=force)
    summary = {"name": config.name, "objective": spec["type"], "value": value, "wrt": wrt,
               "design": at_design.source,
               "interpolation": _interpolation_label(interpolation),
               "solver": solver_class(config.data["solver"]["backend"]).name,
               "fesens_version": __version__}
    echo(f"{config.name}: {spec['type']} at {at_design.source}, interpolation "
         f"{summary['interpolation']}")
    field_name = sensitivity_name(spec["type"], wrt)
    cell_data = {"density": rho, **solution.cell_data()}
    if wrt == "loads":
        rows = [{"name": name, "magnitude": at[name], "derivative": float(gradient[name])}
                for name in model.loads]
        summary["loads"] = rows
        folder.write_text("sensitivity.csv", "name,magnitude,derivative\n" + "".join(
            f"{r['name']},{r['magnitude']!r},{r['derivative']!r}\n" for r in rows))
        echo(f"{spec['type']} = {value:.6g}; derivatives with respect to the load magnitudes:")
        for row in rows:
            echo(f"  {row['name']}: {row['derivative']:.6g}")
    else:
        gradient = np.asarray(gradient, dtype=float)
        cell_data[field_name] = gradient
        summary["gradient"] = {"field": field_name, "min": float(gradient.min()),
                               "max": float(gradient.max()), "sum": float(gradient.sum()),
                               "norm": float(np.linalg.norm(gradient))}
        if config.dim == 2:
            plot_cell_field(config.mesh, gradient, folder.file("sensitivity.png"),
                            title=f"{config.name}: d {spec['type']} / d {wrt}",
                            label=field_name, cmap="viridis", color_scale="symlog",
                            clip_percentile=99.0)
        echo(f"{spec['type']} = {value:.6g}; d/d{wrt}: min {gradient.min():.4g}, max "
             f"{gradient.max():.4g}, sum {gradient.sum():.6g}")
    write_mesh(folder.file("sensitivity.vtu"), config.mesh, point_data=solution.point_data(),
               cell_data=cell_data)
    folder.write_json("sensitivity.json", summary)
    echo(f"results in {folder.path}: " + ", ".join(sorted(
        p.name for p in folder.path.iterdir() if p.name.startswith("sensitivity"))))
    return summary
