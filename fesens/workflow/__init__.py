"""The command-line jobs: optimize a design, solve, compute sensitivities; each writes a
results folder."""

from fesens.workflow.analysis import run_sensitivity, run_solve
from fesens.workflow.common import Interrupted
from fesens.workflow.optimize import run_optimization

__all__ = ["Interrupted", "run_optimization", "run_sensitivity", "run_solve"]
