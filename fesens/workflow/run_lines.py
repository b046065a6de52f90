"""What an optimization run prints: the line that describes the problem, one progress line
per iteration (and which history columns it shows), the outcome sentence and the final line."""

from __future__ import annotations

from fesens.config import Config
from fesens.config.load_cases import combination
from fesens.opt import DesignProblem, FrequencyProblem
from fesens.opt.status import Ending


def shown_columns(problem: DesignProblem) -> list[str]:
    """History columns the progress line shows: the extra constraints, the first
    frequency of a frequency design."""
    return [c.name for c in problem.constraints] + [
        name for name in problem.reports if name == "frequency_1"]


def progress_line(record: dict, extras: list[str]) -> str:
    line = (f"{record['iteration']:5d}  objective {record['objective']: .6e}  "
            f"volume {record['volume']:.4f}  change {record['change']:.4f}  "
            f"{record.get('seconds', 0.0):6.2f} s")
    return line + "".join(f"  {name} {record[name]:.4g}" for name in extras if name in record)


def combined(data: dict) -> str:
    """`` (worst of 2 load cases)`` or `` (weighted sum of 2 load cases)``, or ``""``."""
    count = len(data.get("load_cases", []))
    if not count:
        return ""
    how = "worst" if combination(data) == "max" else "weighted sum"
    return f" ({how} of {count} load cases)"


def describe(config: Config, problem: DesignProblem, model) -> str:
    data = config.data
    pen, flt = data["penalization"], data["filter"]
    penalty = pen["penalty"]
    penalty = (f"{penalty['start']:g}→{penalty.get('final', penalty['start']):g}"
               if isinstance(penalty, dict) else f"{penalty:g}")
    radius = f" r={flt['radius']:g}" if "radius" in flt else ""
    return (f"{config.name}: {config.mesh.n_cells} {config.mesh.cell_type} cells, "
            f"{model.dofmap.n_dofs} dofs, {int(problem.collective.sum(problem.n_design))} "
            "design variables; "
            f"{data['objective']['type']}{combined(data)}"
            f"{' (maximized)' if isinstance(problem, FrequencyProblem) else ''}, "
            f"volume ≤ {data['constraints']['volume_fraction']:g}; "
            f"{pen['type'].upper()} {penalty}, {flt['type']} filter{radius}, "
            f"{data['optimizer']['type'].upper()}"
            # what the "auto" solver chose, and why
            + (f"; {model.solver_choice.line()}" if model.solver_choice is not None else ""))


def final_line(config: Config, summary: dict) -> str:
    frequencies = summary.get("frequencies", {}).get("final") or []  # a frequency design's
    first = f", f1 {frequencies[0]:.5g}" if frequencies else ""
    return (f"{summary['outcome']}: objective {summary['objective']['value']:.6g}{first}, volume "
            f"{summary['volume_fraction']:.4f} (limit "
            f"{config.data['constraints']['volume_fraction']:g}); "
            f"{summary['wall_time_seconds']:.1f} s")


def outcome(config: Config, history: list[dict], ending: Ending) -> str:
    """One plain sentence: converged, or not, and why not (``ending``: the run's status,
    :mod:`fesens.opt.status`)."""
    iterations = history[-1]["iteration"] if history else 0
    if ending.converged:
        return f"converged after {iterations} iterations"
    if ending.status != "max_iter":  # infeasible, degenerate: its reason says why
        return f"{ending.status.upper()} after {iterations} iterations: {ending.reason}"
    stop = config.data["stop"]
    change = history[-1]["change"] if history else float("inf")
    reason = (f"the design change {change:.3g} is above stop.tol_change = "
              f"{stop['tol_change']:g}" if change >= stop["tol_change"] else
              "the penalty or projection continuation had not ended")
    return (f"NOT CONVERGED after {iterations} iterations (the limit, stop.max_iter = "
            f"{stop['max_iter']}): {reason}; `--resume --max-iter N` continues the run")
