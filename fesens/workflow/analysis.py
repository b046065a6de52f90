"""``fesens solve`` and ``fesens sensitivity``: one forward solve (and one adjoint) of the
model a config describes, with the full material everywhere; the optimization sections of
the config are ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from fesens import __version__
from fesens.ad import getval, value_and_grad
from fesens.adjoint import Differentiable
from fesens.config import Config, ConfigError, build_model, response, selections
from fesens.config.build import solver_argument
from fesens.config.checks import join
from fesens.config.schema import check_typed, response_variants
from fesens.fem.solution import Solution
from fesens.mesh import write_mesh
from fesens.output import ResultsFolder
from fesens.plotting import plot_cell_field
from fesens.solvers import solver_class

#: ``--wrt`` choices and the solve parameter each one differentiates.
WRT = {"density": "scale", "E": "E", "nu": "nu", "conductivity": "conductivity",
       "loads": "loads"}
#: Objectives ``fesens sensitivity`` can differentiate (functions of the solution).
OBJECTIVES = ("compliance", "thermal_compliance", "displacement", "temperature",
              "stress_pnorm", "stress_ks")


def _support_label(support: dict, index: int) -> str:
    return support.get("group") or f"supports[{index}]"


def _solution_png(config: Config, solution: Solution, path: Path) -> Path | None:
    mesh = config.mesh
    if mesh.dim != 2:
        return None
    if config.physics == "elasticity":
        return plot_cell_field(mesh, solution.von_mises(), path,
                               displacement=solution.displacement,
                               title=f"{config.name}: von Mises", label="von Mises stress",
                               cmap="inferno", clip_percentile=99.0)
    cell_temperature = solution.temperature[mesh.cells].mean(axis=1)
    return plot_cell_field(mesh, cell_temperature, path, title=f"{config.name}: temperature",
                           label="temperature", cmap="inferno")


def run_solve(config: Config, out: str | Path, *, force: bool = False,
              echo: Callable[[str], None] = print, command: str = "fesens solve") -> dict:
    """Solve the config's model; write ``solution.vtu``, ``solution.json`` (and
    ``solution.png`` in 2D) to ``out``. Returns the JSON summary."""
    folder = ResultsFolder(out)
    folder.check(force=force, command=command)
    model = build_model(config)
    backend, options = _solver(config)
    solution = model.solve(solver=backend, solver_options=options)
    folder.prepare(clear=force)
    solution.write(folder.file("solution.vtu"))
    _solution_png(config, solution, folder.file("solution.png"))
    reactions = {}
    for i, support in enumerate(config.data["supports"]):
        where = selections.nodes(join("supports", i), support, config.mesh, config.label)
        reactions[_support_label(support, i)] = solution.reaction_force(where).tolist()
    summary = {"name": config.name, "physics": config.physics,
               "dofs": model.dofmap.n_dofs, "compliance": solution.compliance(),
               "reactions": reactions, "solver": solver_class(backend).name,
               "fesens_version": __version__}
    if config.physics == "elasticity":
        summary["max_displacement"] = float(np.linalg.norm(solution.displacement, axis=1).max())
        summary["max_von_mises"] = float(solution.von_mises().max())
        echo(f"{config.name}: {model.describe()}; compliance {summary['compliance']:.6g}, "
             f"max |u| {summary['max_displacement']:.4g}, "
             f"max von Mises {summary['max_von_mises']:.4g}")
    else:
        summary["max_temperature"] = float(solution.temperature.max())
        summary["min_temperature"] = float(solution.temperature.min())
        echo(f"{config.name}: {model.describe()}; thermal compliance "
             f"{summary['compliance']:.6g}, temperature {summary['min_temperature']:.4g} .. "
             f"{summary['max_temperature']:.4g}")
    for label, force_vector in reactions.items():
        echo(f"reaction on {label}: {', '.join(f'{v:.6g}' for v in force_vector)}")
    folder.write_json("solution.json", summary)
    echo(f"results in {folder.path}: solution.vtu, solution.json"
         + (", solution.png" if config.dim == 2 else ""))
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
    if name not in OBJECTIVES:
        raise ConfigError(f"--objective {name!r} cannot be differentiated by `fesens "
                          f"sensitivity`; choose one of {', '.join(OBJECTIVES)}")
    if given and given["type"] == name:
        return given
    try:
        return check_typed("objective", {"type": name}, response_variants(config.physics))
    except ConfigError as err:
        raise ConfigError(f"--objective {name}: {err}; give its parameters in the config's "
                          f"[objective] table (type = \"{name}\")") from None


def _wrt_check(config: Config, model, wrt: str) -> None:
    allowed = (("density", "E", "nu", "loads") if config.physics == "elasticity"
               else ("density", "conductivity", "loads"))
    if wrt not in allowed:
        raise ConfigError(f"--wrt {wrt} does not apply to {config.physics} (choose one of "
                          f"{', '.join(allowed)})")
    if wrt == "loads" and not model.loads:
        raise ConfigError("--wrt loads: the config defines no loads")


def run_sensitivity(config: Config, out: str | Path, *, wrt: str, objective: str | None = None,
                    force: bool = False, echo: Callable[[str], None] = print,
                    command: str = "fesens sensitivity") -> dict:
    """Gradient of an objective with respect to a cell field (density scale, E, ν,
    conductivity) or to the load magnitudes, by one adjoint solve.

    Writes ``sensitivity.vtu`` (the gradient as cell data, with the solution),
    ``sensitivity.json``, and ``sensitivity.csv`` for loads or ``sensitivity.png`` for a
    2D field. Returns the JSON summary.
    """
    folder = ResultsFolder(out)
    folder.check(force=force, command=command)
    spec = objective_spec(config, objective)
    model = build_model(config)
    _wrt_check(config, model, wrt)
    problem = Differentiable(model, solver_argument(config))
    J = response(spec, config)
    rho = np.ones(config.mesh.n_cells)
    captured = {}

    def objective_of(parameter):
        if wrt == "loads":
            state = problem.solve(loads=parameter)
        else:
            state = problem.solve(**{WRT[wrt]: parameter})
        captured["state"] = state
        return J(state, rho)

    if wrt == "loads":
        at = {name: 1.0 for name in model.loads}
    elif wrt == "density":
        at = np.ones(config.mesh.n_cells)
    else:
        at = np.array(getattr(model, WRT[wrt]), dtype=float)
    value, gradient = value_and_grad(objective_of)(at)
    value = float(value)
    state = captured["state"]
    solution = Solution(model, np.asarray(getval(state.u)),
                        [np.asarray(getval(c)) for c in state.coefficients], {}, None)
    folder.prepare(clear=force)
    summary = {"name": config.name, "objective": spec["type"], "value": value, "wrt": wrt,
               "solver": solver_class(config.data["solver"]["backend"]).name,
               "fesens_version": __version__}
    field_name = f"d_{spec['type']}_d_{wrt}"
    cell_data = dict(solution.cell_data())
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
                            label=field_name, cmap="viridis")
        echo(f"{spec['type']} = {value:.6g}; d/d{wrt}: min {gradient.min():.4g}, max "
             f"{gradient.max():.4g}, sum {gradient.sum():.6g}")
    write_mesh(folder.file("sensitivity.vtu"), config.mesh, point_data=solution.point_data(),
               cell_data=cell_data)
    folder.write_json("sensitivity.json", summary)
    echo(f"results in {folder.path}: " + ", ".join(sorted(
        p.name for p in folder.path.iterdir() if p.name.startswith("sensitivity"))))
    return summary
