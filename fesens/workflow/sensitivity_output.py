"""How ``fesens sensitivity`` reports and writes a gradient, by where it lives: one value per
cell (:data:`CELLS`: the density, a physics' parameter), one vector per node
(:data:`NODES`: the node coordinates) or one derivative per named load (:data:`LOADS`).
Each command target (:mod:`fesens.workflow.targets`) names one.

``report`` puts the gradient's numbers into the summary (``sensitivity.json``) and prints
its lines; ``write`` writes its own files (``sensitivity.png``, ``sensitivity.csv``) and
returns the fields ``sensitivity.vtu`` holds: ``d_<objective>_d_<wrt>``, and with load
cases ``d_<objective>_<case>_d_<wrt>`` per case.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fesens.config import Config
from fesens.output import ResultsFolder, sensitivity_name
from fesens.plotting import plot_cell_field, plot_nodal_field


class GradientOutput:
    """Where a target's gradient is written; ``location`` is ``"cell"``, ``"point"`` (the
    data of ``sensitivity.vtu`` it goes to) or ``"load"`` (rows of ``sensitivity.csv``)."""

    location: str

    def report(self, config: Config, summary: dict, at, gradient, case_gradients: list | None,
               echo: Callable[[str], None]) -> None:
        """Add the gradient's numbers to ``summary`` (and to each of its ``cases``), print
        its lines. ``at`` is where it was taken, ``case_gradients`` each load case's (None
        without load cases)."""
        raise NotImplementedError

    def write(self, config: Config, folder: ResultsFolder, summary: dict, gradient,
              case_gradients: list | None) -> dict[str, np.ndarray]:
        """Write the gradient's own files to ``folder``; returns the fields
        ``sensitivity.vtu`` holds of it (none for loads)."""
        raise NotImplementedError


def gradient_fields(config: Config, summary: dict, gradient,
                    case_gradients: list | None) -> dict[str, np.ndarray]:
    """``{d_<objective>_d_<wrt>: gradient, d_<objective>_<case>_d_<wrt>: ...}``, the
    arrays as floats (``(n_cells,)`` or ``(n_points, dim)``)."""
    objective, wrt = summary["objective"], summary["wrt"]
    fields = {sensitivity_name(objective, wrt): np.asarray(gradient, dtype=float)}
    for case, per_case in zip(config.data.get("load_cases") or [], case_gradients or [],
                              strict=True):
        fields[sensitivity_name(f"{objective}_{case['name']}", wrt)] = np.asarray(
            per_case, dtype=float)
    return fields


def _numbers(field: str, gradient: np.ndarray) -> dict:
    return {"field": field, "min": float(gradient.min()), "max": float(gradient.max()),
            "sum": float(gradient.sum()), "norm": float(np.linalg.norm(gradient))}


class _Field(GradientOutput):
    """A gradient field (per cell or per node): its extrema, sum and norm in the summary,
    and each load case's under its entry of ``cases``."""

    def report(self, config, summary, at, gradient, case_gradients, echo) -> None:
        fields = gradient_fields(config, summary, gradient, case_gradients)
        (name, combined), *per_case = fields.items()
        summary["gradient"] = _numbers(name, combined)
        for entry, (case_name, values) in zip(summary.get("cases", []), per_case,
                                              strict=True):
            entry["gradient"] = _numbers(case_name, values)
        echo(self._line(config, summary, combined))

    def write(self, config, folder, summary, gradient, case_gradients) -> dict:
        fields = gradient_fields(config, summary, gradient, case_gradients)
        if config.dim == 2:
            self._draw(config, folder, summary, *next(iter(fields.items())))
        return fields

    def _line(self, config: Config, summary: dict, gradient: np.ndarray) -> str:
        raise NotImplementedError

    def _draw(self, config: Config, folder: ResultsFolder, summary: dict, name: str,
              gradient: np.ndarray) -> None:
        raise NotImplementedError


class _PerCell(_Field):
    """One value per cell ``(n_cells,)``; in 2D ``sensitivity.png`` on a symmetric-log
    scale."""

    location = "cell"

    def _line(self, config, summary, gradient) -> str:
        return (f"{summary['objective']} = {summary['value']:.6g}; d/d{summary['wrt']}: min "
                f"{gradient.min():.4g}, max {gradient.max():.4g}, sum {gradient.sum():.6g}")

    def _draw(self, config, folder, summary, name, gradient) -> None:
        plot_cell_field(config.mesh, gradient, folder.file("sensitivity.png"),
                        title=f"{config.name}: d {summary['objective']} / d {summary['wrt']}",
                        label=name, cmap="viridis", color_scale="symlog",
                        clip_percentile=99.0)


class _PerNode(_Field):
    """One vector per node ``(n_points, dim)`` (shape sensitivities); in 2D
    ``sensitivity.png`` of its length per node."""

    location = "point"

    def _line(self, config, summary, gradient) -> str:
        magnitude = np.linalg.norm(gradient, axis=1)
        node = int(np.argmax(magnitude))
        where = ", ".join(f"{c:.4g}" for c in config.mesh.points[node])
        return (f"{summary['objective']} = {summary['value']:.6g}; d/d(node coordinates): "
                f"largest {magnitude[node]:.4g} at node {node} ({where}), norm "
                f"{np.linalg.norm(gradient):.6g}")

    def _draw(self, config, folder, summary, name, gradient) -> None:
        plot_nodal_field(config.mesh, np.linalg.norm(gradient, axis=1),
                         folder.file("sensitivity.png"),
                         title=f"{config.name}: |d {summary['objective']} / d x| per node",
                         label=f"|{name}|", clip_percentile=99.0)


class _PerLoad(GradientOutput):
    """One derivative per named load's magnitude (and per load case,
    ``derivative_<case>``): the summary's ``loads`` and ``sensitivity.csv``."""

    location = "load"

    def report(self, config, summary, at, gradient, case_gradients, echo) -> None:
        cases = config.data.get("load_cases") or []
        rows = []
        for name in at:
            row = {"name": name, "magnitude": at[name], "derivative": float(gradient[name])}
            for case, per_case in zip(cases, case_gradients or [], strict=True):
                row[f"derivative_{case['name']}"] = float(per_case[name])
            rows.append(row)
        summary["loads"] = rows
        echo(f"{summary['objective']} = {summary['value']:.6g}; derivatives with respect to "
             "the load magnitudes:")
        for row in rows:
            echo(f"  {row['name']}: {row['derivative']:.6g}")

    def write(self, config, folder, summary, gradient, case_gradients) -> dict:
        rows = summary["loads"]
        columns = list(rows[0])
        folder.write_text("sensitivity.csv", ",".join(columns) + "\n" + "".join(
            ",".join([str(r["name"]), *(repr(r[c]) for c in columns[1:])]) + "\n"
            for r in rows))
        return {}


CELLS, NODES, LOADS = _PerCell(), _PerNode(), _PerLoad()
