"""What ``fesens solve``, ``sensitivity`` and ``optimize`` add for a nonlinear physics
(its class a :class:`~fesens.fem.model.nonlinear.NonlinearModel`): the Newton options of the
config, the load–displacement curve (``load_path.csv``, ``load_path.png``), the Newton
report in ``solution.json``, and the last converged state of a solve that failed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens.ad import getval
from fesens.config import Config, response
from fesens.config.nonlinear import (
    OBJECTIVE_KEYS,
    level_values,
    load_factors,
    monitored_dof,
)
from fesens.errors import NewtonError
from fesens.fem.assembly.dofs import AXES
from fesens.fem.nonlinear.newton import NewtonReport
from fesens.mesh import write_mesh
from fesens.output import ResultsFolder
from fesens.plotting import plot_load_path


def objective_levels(config: Config, solution, rho, echo: Callable[[str], None]) -> dict:
    """The objective at each of its load levels (``objective.load_factors``) of a solved
    config, as ``solution.json`` and ``sensitivity.json`` hold it, and one line each;
    empty without load factors.

    Parameters
    ----------
    config : Config
    solution : NonlinearSolution
        Solved with the config's ``at_load_factors`` (plain or traced).
    rho : array
        The density ``(n_cells,)`` the responses read (full material: ones).

    Returns
    -------
    dict
        ``{"levels": [{"load_factor", "weight", "value"}, ...], "levels_value": Σ w_k j_k}``.
    """
    spec = config.data.get("objective") or {}
    if load_factors(config.data) is None:
        return {}
    single = response({k: v for k, v in spec.items() if k not in OBJECTIVE_KEYS}, config)
    values = [float(getval(v)) for v in level_values(spec, single, solution, rho)]
    levels = [{"load_factor": t, "weight": w, "value": v} for t, w, v in
              zip(spec["load_factors"], spec["weights"], values, strict=True)]
    total = float(sum(w * v for w, v in zip(spec["weights"], values, strict=True)))
    for level in levels:
        echo(f"{spec['type']} at load factor {level['load_factor']:.6g}: "
             f"{level['value']:.6g} (weight {level['weight']:.6g})")
    echo(f"{spec['type']} over the load levels (weighted sum): {total:.6g}")
    return {"levels": levels, "levels_value": total}


def tangent_solver_name(model, backend: str, options: dict) -> str:
    """The backend that solves the tangent (``auto`` resolved)."""
    return model.tangent_solver(backend, **options).name


def newton_summary(report: NewtonReport) -> dict:
    """The Newton report as JSON numbers: converged load factors, iterations, cut-backs,
    the tangent factorizations and how many fell back to another backend (with the
    reason), and every attempt with its residual norms."""
    return {"converged": True, "load_factors": [float(t) for t in report.load_factors],
            "steps": len(report.load_factors) - 1, "iterations": report.iterations,
            "cutbacks": [{"load_factor": float(t), "reason": why}
                         for t, why in report.cutbacks],
            "factorizations": report.factorizations, "fallbacks": report.fallbacks,
            **({"fallback_reason": report.fallback_reason} if report.fallbacks else {}),
            "attempts": [{"load_factor": float(a.load_factor), "converged": a.converged,
                          "iterations": max(len(a.residuals) - 1, 0),
                          "residuals": [float(r) for r in a.residuals],
                          **({} if a.converged else {"reason": a.reason})}
                         for a in report.attempts]}


def _monitored(config: Config, model) -> tuple[int | None, str]:
    """The dof the curve follows (None: the norm) and its column name."""
    dof = monitored_dof(config.data, config.mesh, model.n_components)
    field = model.field_name
    if dof is None:
        return None, f"{field}_norm"
    node, comp = divmod(dof, model.n_components)
    axis = f"_{AXES[comp]}" if model.n_components > 1 else ""
    return dof, f"{field}{axis}_node{node}"


def write_load_path(config: Config, model, solution, folder: ResultsFolder) -> list[str]:
    """``load_path.csv`` (load factor and the monitored value at every converged step, 0
    first) and ``load_path.png``; returns their names."""
    dof, column = _monitored(config, model)
    factors, values = solution.load_path(dof)
    folder.write_text("load_path.csv", f"load_factor,{column}\n" + "".join(
        f"{t!r},{v!r}\n" for t, v in zip(factors.tolist(), values.tolist(), strict=True)))
    plot_load_path(factors, values, folder.file("load_path.png"), label=column,
                   title=f"{config.name}: load path")
    return ["load_path.csv", "load_path.png"]


def add_config_hint(error: NewtonError, *, design: bool = False) -> None:
    """Name the config keys that a failed Newton solve may need in ``error``'s message
    (``design``: of an optimization, where nearly void cells distort most). An incremental
    analysis' failure (the error names its ``increment``) has no ``[newton] steps``: its
    steps are the increments."""
    if error.increment is not None:
        keys = ("more increments between these load factors in analysis.factors, "
                "[newton] max_cutbacks, max_iterations")
    else:
        keys = "[newton] steps, max_cutbacks, max_iterations"
    if design:
        keys += ("; in a design, nearly void cells may distort too far: a larger "
                 "penalization.minimum")
    error.args = (f"{error.args[0]} (in the config: {keys})", *error.args[1:])


def write_last_converged(config: Config, model, error: NewtonError, folder: ResultsFolder,
                         echo: Callable[[str], None]) -> None:
    """After a failed solve: the last converged state (``solution.vtu``, with the
    physics' fields) and ``solution.json`` saying why it stopped; the error's message then
    names the folder and the config keys to change. Nothing is written when no step
    converged."""
    add_config_hint(error)
    if error.state is None:
        return
    fields = model.material_fields()
    names = tuple(fields)
    f = error.load_factor * model.load_vector(None, None)
    state = model.solution_class(model, np.asarray(error.state, dtype=float), f,
                                 [fields[k] for k in names], {}, fields=fields)
    write_mesh(folder.file("solution.vtu"), config.mesh, point_data=state.point_data(),
               cell_data={k: np.asarray(v) for k, v in state.cell_data().items()})
    folder.write_json("solution.json", {
        "name": config.name, "physics": config.physics, "dofs": model.dofmap.n_dofs,
        "newton": {"converged": False, "load_factor": float(error.load_factor),
                   "reason": error.reason,
                   "residuals": [[float(r) for r in h] for h in error.history]}})
    echo(f"the last converged state (load factor {error.load_factor:.6g}) is in "
         f"{folder.path}: solution.vtu, solution.json")
    error.args = (f"{error.args[0]}; the last converged state (load factor "
                  f"{error.load_factor:.6g}) is written to {folder.file('solution.vtu')}",
                  *error.args[1:])
