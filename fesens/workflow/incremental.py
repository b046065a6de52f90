"""``fesens solve`` of an incremental config (``[analysis] type = "incremental"``,
:mod:`fesens.config.increments`): the history of a path-dependent physics, one Newton
solve per increment.

It writes the fields of every increment (``solution_NNNN.vtu``: the displacement and the
per-cell internal variables the history records, e.g. the equivalent plastic strain, the von
Mises stress, the back stress's norm) with ``solution.pvd``, their ParaView series by
increment, the load–displacement curve (``load_path.csv``, ``load_path.png``: the mean
displacement of the monitored dofs against the sum of their reactions or loads, at every
increment) and ``solution.json``. A Newton failure inside an increment writes the
increments that converged before it, says which was the last, and raises.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens import __version__
from fesens.config import Config, build_model
from fesens.config.increments import increment_run
from fesens.config.nonlinear import monitored_dof
from fesens.errors import NewtonError
from fesens.fem.assembly.dofs import AXES
from fesens.mesh import write_mesh
from fesens.output import ResultsFolder
from fesens.plotting.histories import plot_histories
from fesens.workflow.nonlinear import tangent_solver_name
from fesens.workflow.time_analysis import collection


def curve_dofs(config: Config, model) -> tuple[np.ndarray, str]:
    """The dofs the load–displacement curve follows and their name: ``[load_path]``'s
    point, else the dofs of the prescribed nonzero values (a displacement-driven run),
    else the loaded dofs."""
    dof = monitored_dof(config.data, config.mesh, model.n_components)
    if dof is not None:
        node, comp = divmod(dof, model.n_components)
        return np.array([dof]), f"{model.field_name}_{AXES[comp]}_node{node}"
    prescribed = model.constrained_dofs[model.prescribed_values() != 0.0]
    if prescribed.size:
        return prescribed, f"prescribed {model.field_name}"
    loaded = np.flatnonzero(np.asarray(model.load_vector(None, None)))
    return loaded, f"loaded {model.field_name}"


def _write_increments(config: Config, folder: ResultsFolder, model, history) -> list[str]:
    """Each increment's fields and the series; returns the files' names."""
    names = []
    dim = model.n_components
    for n in range(len(history.factors)):
        name = f"solution_{n:04d}.vtu"
        u = np.asarray(history.displacements[n], dtype=float)
        write_mesh(folder.file(name), config.mesh,
                   point_data={model.field_name: u.reshape(-1, dim)},
                   cell_data={k: np.asarray(v, dtype=float)
                              for k, v in history.cell_fields(n).items()})
        names.append(name)
    folder.write_text("solution.pvd", collection(list(enumerate(names))))
    return names


def _write_curve(config: Config, folder: ResultsFolder, model, history) -> dict:
    """``load_path.csv`` and ``load_path.png`` of the history; returns the curve's columns."""
    dofs, label = curve_dofs(config, model)
    curve = np.asarray(history.curve(dofs), dtype=float)
    columns = {"increment": np.arange(len(history.factors)),
               "load_factor": np.asarray(history.factors, dtype=float),
               "displacement": curve[:, 0], "force": curve[:, 1]}
    rows = zip(*(v.tolist() for v in columns.values()), strict=True)
    folder.write_text("load_path.csv", ",".join(columns) + "\n" + "".join(
        ",".join(repr(x) for x in row) + "\n" for row in rows))
    plot_histories(curve[:, 0], {"force": curve[:, 1]}, folder.file("load_path.png"),
                   xlabel=f"{label} (mean)", ylabel="force (sum of reactions or loads)",
                   title=f"{config.name}: load–displacement")
    return {"dofs": label, "displacement": curve[:, 0].tolist(),
            "force": curve[:, 1].tolist()}


def _write_history(config: Config, folder: ResultsFolder, model, history) -> dict:
    names = _write_increments(config, folder, model, history)
    curve = _write_curve(config, folder, model, history)
    final = history.cell_fields(len(history.factors) - 1)
    return {"increments": len(names) - 1, "factors": np.asarray(history.factors).tolist(),
            "plastic_work": np.asarray(history.plastic_work, dtype=float).tolist(),
            "curve": curve,
            "final": {f"max_{k}": float(np.max(v)) for k, v in final.items()}}


def solve_increments(config: Config, folder: ResultsFolder, *, force: bool,
                     echo: Callable[[str], None]) -> dict:
    """``fesens solve`` of an incremental config (see the module docstring); returns the
    JSON summary.

    Raises
    ------
    NewtonError
        An increment that did not converge after its cut-backs: its message names the
        increment, and the increments before it are written.
    """
    model = build_model(config)
    run = increment_run(config, model)
    factors = config.data["analysis"]["factors"]
    echo(f"{config.name}: {model.describe()}; incremental run, {len(factors) - 1} "
         f"increments, load factors {', '.join(f'{t:g}' for t in factors)}")
    common = {"name": config.name, "physics": config.physics, "analysis": "incremental",
              "dofs": model.dofmap.n_dofs}
    try:
        history = run.solve()
    except NewtonError as exc:
        folder.prepare(clear=force)
        partial, last = exc.partial, exc.last_converged
        if partial is not None:
            written = _write_history(config, folder, model, partial)
            folder.write_json("solution.json", {**common, "converged": False,
                                                "last_converged": int(last), **written,
                                                "fesens_version": __version__})
            exc.args = (f"{exc.args[0]}; the increments 0 to {last} converged and are "
                        f"written to {folder.path} (solution_NNNN.vtu, load_path.csv); in "
                        "the config: [newton] max_cutbacks, max_iterations, or smaller "
                        "steps in analysis.factors", *exc.args[1:])
        raise
    folder.prepare(clear=force)
    written = _write_history(config, folder, model, history)
    solver = config.data["solver"]
    summary = {**common, "converged": True, **written,
               "solver": tangent_solver_name(model, solver["backend"], solver["options"]),
               "fesens_version": __version__}
    curve = written["curve"]
    for n, t in enumerate(factors):
        echo(f"  increment {n}: load factor {t:g}, {curve['dofs']} "
             f"{curve['displacement'][n]:.6g}, force {curve['force'][n]:.6g}, plastic work "
             f"{written['plastic_work'][n]:.6g}")
    echo(", ".join(f"{k} {v:.6g}" for k, v in written["final"].items()))
    folder.write_json("solution.json", summary)
    echo(f"results in {folder.path}: {len(factors)} fields solution_NNNN.vtu, solution.pvd, "
         "load_path.csv, load_path.png, solution.json")
    return summary
