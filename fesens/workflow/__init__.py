"""The jobs behind the command line: optimize a design, solve, compute sensitivities; each
writes a results folder (an optimization can also run in memory, for notebooks)."""

from fesens.workflow.analysis import run_sensitivity, run_solve
from fesens.workflow.common import Interrupted
from fesens.workflow.optimize import OptimizationRun, run_optimization

__all__ = ["Interrupted", "OptimizationRun", "run_optimization", "run_sensitivity", "run_solve"]
