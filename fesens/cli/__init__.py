"""The ``fesens`` command line (click): thin commands whose docstrings are their help.

One module per command group: :mod:`~fesens.cli.info` (``info``, ``presets``, ``docs``),
:mod:`~fesens.cli.demo`, :mod:`~fesens.cli.optimize`, :mod:`~fesens.cli.analysis`
(``solve``, ``sensitivity``), :mod:`~fesens.cli.study`; :mod:`~fesens.cli.options` holds
the options the config-driven commands share and :mod:`~fesens.cli.errors` turns exceptions
into messages and exit codes: 0 success, 1 numerical failure (solver, NaN), 2 bad input
(config, files, usage), 130 interrupted (Ctrl-C; an optimization is saved and can be
resumed). The top-level ``cli.py`` and the ``fesens`` console script call :func:`main`.
"""

from __future__ import annotations

import click

from fesens import __version__
from fesens.cli.analysis import sensitivity, solve
from fesens.cli.demo import demo
from fesens.cli.errors import FesensGroup, run_command
from fesens.cli.info import docs, info, presets
from fesens.cli.optimize import optimize
from fesens.cli.study import study_command

__all__ = ["cli", "main"]


@click.group(cls=FesensGroup)
@click.version_option(__version__, prog_name="fesens")
def cli() -> None:
    """fesens: finite-element solves, their exact gradients, and design optimization."""


for _command in (info, demo, presets, docs, optimize, solve, sensitivity, study_command):
    cli.add_command(_command)


def main() -> None:
    """Console-script entry point: exit 2 for bad input, 1 for numerical failures."""
    run_command(cli)
