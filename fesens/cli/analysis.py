"""``fesens solve`` and ``fesens sensitivity``: one model of a config file or a preset,
without optimization."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import click

from fesens.cli.errors import FesensCliError
from fesens.cli.options import (
    command_line,
    echo_unless,
    load_source,
    output_options,
    source_options,
)

#: Exit code of ``fesens sensitivity --check`` when the gradient check fails (the results,
#: the check's numbers among them, are written all the same).
GRADIENT_CHECK_FAILED = 5


class RegistryChoice(click.Choice):
    """A choice whose options are read when the command line is parsed or its help shown, so
    that a physics registered after import (a plug-in, a test) is offered too."""

    def __init__(self, options: Callable[[], Sequence[str]]):
        self._options = options
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self._options())


class RegistryOption(click.Option):
    """An option whose help text is read when the help is shown (from a registry that
    importing would load the workflows: ``fesens --help`` imports nothing heavy)."""

    def __init__(self, *args, help_text: Callable[[], str], **kwargs):
        self._help_text = help_text
        super().__init__(*args, **kwargs)

    @property
    def help(self) -> str:
        return self._help_text()

    @help.setter
    def help(self, value) -> None:  # click sets it; the registry's text stands
        pass


def _wrt_help() -> str:
    from fesens.workflow.targets import wrt_help

    return wrt_help()


def _wrt_choices() -> tuple[str, ...]:
    from fesens.workflow.targets import wrt_choices

    return wrt_choices()


@click.command()
@source_options
@output_options(default_out="results/NAME-solve")
def solve(config_path: Path | None, preset: str | None, out_dir: Path | None, force: bool,
          quiet: bool) -> None:
    """Solve the model of CONFIG (or a preset) with full material; no optimization.

    Writes to DIR: solution.vtu (the physics' field, e.g. displacement or temperature, and
    its post-processing, e.g. von Mises stress or heat flux), solution.json (compliance,
    extrema, reactions) and, in 2D, solution.png.
    """
    from fesens.workflow import run_solve

    config = load_source(config_path, preset, optimize=False)
    out_dir = out_dir or Path("results") / f"{config.name}-solve"
    run_solve(config, out_dir, force=force, echo=echo_unless(quiet),
              command=command_line("solve", config_path, preset))


@click.command()
@source_options
@click.option("--wrt", required=True,
              type=RegistryChoice(_wrt_choices), cls=RegistryOption, help_text=_wrt_help)
@click.option("--objective", "objective", metavar="NAME",
              help="An objective type of the config's physics (e.g. compliance, "
                   "displacement, stress_pnorm) [default: the config's objective, else "
                   "compliance].")
@click.option("--design", "design", type=click.Path(exists=True, path_type=Path),
              metavar="PATH",
              help="Evaluate at this design: a results folder of `fesens optimize`, its "
                   "design.vtu, or its checkpoint.npz (then CONFIG must be the run's "
                   "config.toml) [default: full material].")
@click.option("--check", is_flag=True,
              help="Check the gradient on this config: a central difference and a Taylor "
                   "test along a random direction, printed and stored under 'check' in "
                   "sensitivity.json; exit code 5 if it fails.")
@click.option("--check-seed", type=click.IntRange(min=0), metavar="N",
              help="Seed of the check's random direction (implies --check) [default: a "
                   "fresh one, printed].")
@output_options(default_out="results/NAME-sensitivity")
def sensitivity(config_path: Path | None, preset: str | None, wrt: str, objective: str | None,
                design: Path | None, check: bool, check_seed: int | None,
                out_dir: Path | None, force: bool, quiet: bool) -> None:
    """Exact gradient of an objective of CONFIG's model (one adjoint solve).

    The stiffness is the config's material interpolation ([penalization], final penalty)
    of the density of --design, or of full material; --wrt density differentiates through
    it, as the optimizer does.

    Writes to DIR: sensitivity.vtu (the gradient field d_OBJECTIVE_d_WRT as cell data, for
    --wrt points as point data of one vector per node, with the density and the solution),
    sensitivity.json and, for --wrt loads, sensitivity.csv (one row per named load);
    sensitivity.png for a 2D field.

    With --check the gradient is checked against the objective itself: the derivative
    along a random direction against a central difference (its step and tolerance from
    the round-off measured on the objective) and the Taylor remainders' rate (2 when the
    gradient is right); a verdict line, and exit code 5 when the check fails.
    """
    from fesens.workflow import run_sensitivity

    config = load_source(config_path, preset, optimize=False)
    out_dir = out_dir or Path("results") / f"{config.name}-sensitivity"
    summary = run_sensitivity(config, out_dir, wrt=wrt, objective=objective, design=design,
                              force=force, echo=echo_unless(quiet),
                              check=check or check_seed is not None, check_seed=check_seed,
                              command=command_line("sensitivity", config_path, preset))
    found = summary.get("check")
    if found is not None and not found["passed"]:
        raise FesensCliError(f"{found['verdict']}; seed {found['seed']}, the numbers in "
                             f"{Path(out_dir) / 'sensitivity.json'}", GRADIENT_CHECK_FAILED)
