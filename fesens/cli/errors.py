"""From exceptions to what the user sees: one ``error: ...`` line and an exit code.

Exit codes of every fesens command: 0 success, 1 numerical failure (solver, NaN), 2 bad
input (config, files, usage), 130 interrupted.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from fesens.errors import FesensError, NonFiniteError, SolverError

#: Numerical failures (exit 1); every other FesensError, ValueError, OSError is input (2).
NUMERICAL = (SolverError, NonFiniteError)
#: Bad input (exit 2).
BAD_INPUT = (FesensError, ValueError, OSError)


class FesensCliError(click.ClickException):
    """A one-line ``error: ...`` message and an exit code (2 bad input unless told)."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True, file=file)


class FesensGroup(click.Group):
    """Maps fesens exceptions of any command to a message and an exit code."""

    def invoke(self, ctx: click.Context):
        from fesens.workflow.common import Interrupted

        try:
            return super().invoke(ctx)
        except Interrupted as exc:
            raise FesensCliError(str(exc), Interrupted.exit_code) from None
        except NUMERICAL as exc:
            raise FesensCliError(f"numerical failure ({type(exc).__name__}): {exc}", 1) \
                from None
        except BAD_INPUT as exc:
            raise FesensCliError(str(exc), 2) from None


def run_command(command: click.Command) -> NoReturn:
    """Run ``command`` on ``sys.argv`` and exit: 2 for bad input, 1 for numerical failures,
    130 when aborted."""
    try:
        code = command(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except NUMERICAL as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except BAD_INPUT as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
