"""From exceptions to what the user sees: one ``error: ...`` line and an exit code.

Exit codes of every fesens command: 0 success, 1 numerical failure (solver, NaN) or out of
memory, 2 bad input (config, files, usage), 130 interrupted. Under ``mpirun`` a rank that
fails exits at once with its code (:func:`fesens.mpi.exit_now`), so that ``mpirun`` ends
the others.
"""

from __future__ import annotations

import signal
import sys
import traceback
import warnings
from collections.abc import Callable
from typing import NoReturn

import click

from fesens.errors import FesensError, FesensWarning, Interrupted, NonFiniteError, SolverError
from fesens.interrupts import InterruptFlag
from fesens.mpi import World, exit_now, launched, world

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
    """Maps fesens exceptions of any command to a message and an exit code; under an MPI
    launch of several ranks, refuses a command that does not run under ``mpirun`` (its
    ``mpi_refusal``, a message) before PETSc is started or anything is read or written."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, command, rest = super().resolve_command(ctx, args)
        if launched().distributed:
            refusal = getattr(command, "mpi_refusal", None)
            if refusal:
                raise FesensCliError(refusal)
            world()  # PETSc's view of the launch, checked before any work
        return name, command, rest

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except Interrupted as exc:
            raise FesensCliError(str(exc), Interrupted.exit_code) from None
        except NUMERICAL as exc:
            raise FesensCliError(f"numerical failure ({type(exc).__name__}): {exc}", 1) \
                from None
        except MemoryError as exc:
            raise FesensCliError(out_of_memory(exc), 1) from None
        except BAD_INPUT as exc:
            raise FesensCliError(str(exc), 2) from None


def out_of_memory(exc: MemoryError) -> str:
    """The message of a MemoryError: a resource failure, not bad input (exit 1)."""
    return f"out of memory: {exc}" if str(exc) else "out of memory"


def run_command(command: click.Command) -> NoReturn:
    """Run ``command`` on ``sys.argv`` and exit: 2 for bad input, 1 for numerical failures,
    130 when aborted.

    A Ctrl-C during the command is recorded (:class:`~fesens.interrupts.InterruptFlag`)
    and raised as ``KeyboardInterrupt`` at the run's next safe point (an iteration, a
    solve, a time step, a study sample), never inside a finalizer or a callback that would
    swallow it; a second Ctrl-C while one is pending raises at once. An optimization then
    saves its checkpoint and summary, ignoring Ctrl-C during that save only. Once the
    command has ended in an error or an interruption, Ctrl-C is ignored: the process only
    reports and exits, and a Ctrl-C would replace the exit code by the signal's."""
    InterruptFlag.install()
    ranks = launched()
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warnings(warnings.showwarning)
            code = command(standalone_mode=False)
    except (click.exceptions.Abort, click.ClickException, *NUMERICAL, *BAD_INPUT,
            MemoryError) as exc:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        code = _report(exc, ranks)
    except BaseException:
        if not ranks.distributed:
            raise
        traceback.print_exc()  # an unexpected failure of one rank: end them all
        exit_now(1)
    else:  # the work is done and written: a Ctrl-C now must not turn success into a signal
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    code = code if isinstance(code, int) else 0
    if code and ranks.distributed:
        exit_now(code)  # no collective finalization: mpirun ends the other ranks
    sys.exit(code)


def _one_line_warnings(show: Callable) -> Callable:
    """A ``warnings.showwarning`` that prints a fesens warning as one ``warning: ...`` line
    on stderr (its message names the input and the fix; the source line would only repeat
    fesens's code) and hands every other warning to ``show``."""

    def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, FesensWarning):
            click.echo(f"warning: {message}", err=True)
        else:
            show(message, category, filename, lineno, file, line)

    return show_warning


def _report(exc: BaseException, ranks: World) -> int:
    """Print the ``error: ...`` line of ``exc`` (or ``aborted``), naming the rank when it is
    not rank 0 of a distributed run; its exit code."""
    prefix = "" if ranks.is_root else f"rank {ranks.rank} of {ranks.size}: "
    if isinstance(exc, click.exceptions.Abort):
        click.echo(f"{prefix}aborted", err=True)
        return 130
    if isinstance(exc, click.ClickException):
        if prefix:
            click.echo(f"{prefix}error: {exc.format_message()}", err=True)
        else:
            exc.show()
        return exc.exit_code
    if isinstance(exc, MemoryError):
        click.echo(f"{prefix}error: {out_of_memory(exc)}", err=True)
        return 1
    click.echo(f"{prefix}error: {exc}", err=True)
    return 1 if isinstance(exc, NUMERICAL) else 2
