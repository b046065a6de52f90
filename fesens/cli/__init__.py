"""The ``fesens`` command line (click): thin commands whose docstrings are their help.

Exit codes: 0 success, 1 numerical failure (solver, NaN), 2 bad input (config, files,
usage), 130 interrupted (Ctrl-C; the optimization is saved and can be resumed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from fesens import __version__
from fesens.cli_errors import FesensCliError
from fesens.errors import FesensError, NonFiniteError, SolverError

#: Numerical failures (exit 1); every other FesensError, ValueError, OSError is input (2).
NUMERICAL = (SolverError, NonFiniteError)


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
        except (FesensError, ValueError, OSError) as exc:
            raise FesensCliError(str(exc), 2) from None


@click.group(cls=FesensGroup)
@click.version_option(__version__, prog_name="fesens")
def cli() -> None:
    """fesens: finite-element solves, their exact gradients, and design optimization."""


@cli.command()
def info() -> None:
    """Print the version, the available solver backends and the BLAS in use."""
    from fesens.solvers import available_solvers
    from fesens.sysinfo import blas_description

    click.echo(f"fesens {__version__}")
    click.echo(f"solvers: {', '.join(available_solvers())}")
    click.echo(f"BLAS (SuiteSparse): {blas_description()}")


@cli.command()
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              default=Path("results/demo"), show_default=True, help="Results folder.")
@click.option("--force", is_flag=True, help="Overwrite an existing results folder.")
def demo(out_dir: Path, force: bool) -> None:
    """Solve the bundled L-bracket (Gmsh mesh) and write VTU and PNG results."""
    from fesens.demo import run_demo

    if out_dir.exists() and any(out_dir.iterdir()) and not force:
        raise click.UsageError(
            f"results folder {out_dir} exists and is not empty; pass --force to overwrite"
        )
    for line in run_demo(out_dir):
        click.echo(line)


@cli.command()
def presets() -> None:
    """List the built-in problems (run one with `fesens optimize --preset NAME`)."""
    from fesens.config import preset_descriptions

    descriptions = preset_descriptions()
    width = max(map(len, descriptions))
    for name, description in descriptions.items():
        click.echo(f"{name:<{width}}  {description}")


# ------------------------------------------------------------------ config-driven jobs
def _source_options(function):
    """CONFIG argument and --preset option, shared by optimize, solve and sensitivity."""
    function = click.option("--preset", metavar="NAME",
                            help="A built-in problem instead of CONFIG (see `fesens presets`).")(
        function)
    return click.argument("config_path", metavar="[CONFIG]", required=False,
                          type=click.Path(dir_okay=False, path_type=Path))(function)


def _output_options(function):
    function = click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")(
        function)
    function = click.option("--force", is_flag=True,
                            help="Overwrite the results of a previous run in DIR.")(function)
    return click.option("--out", "out_dir", metavar="DIR",
                        type=click.Path(file_okay=False, path_type=Path),
                        help="Results folder [default: results/NAME].")(function)


def _load(config_path: Path | None, preset: str | None, *, optimize: bool):
    from fesens.config import load_config, load_preset

    if config_path is not None and preset is not None:
        raise click.UsageError("give either CONFIG or --preset NAME, not both")
    if config_path is None and preset is None:
        raise click.UsageError("give a CONFIG file or --preset NAME (see `fesens presets`)")
    if preset is not None:
        return load_preset(preset, optimize=optimize)
    return load_config(config_path, optimize=optimize)


def _command(name: str, config_path: Path | None, preset: str | None, *extra: str) -> str:
    source = f"--preset {preset}" if preset else str(config_path)
    return " ".join(["fesens", name, source, *extra])


def _echo(quiet: bool):
    return (lambda line: None) if quiet else click.echo


@cli.command()
@_source_options
@_output_options
@click.option("--resume", is_flag=True, help="Continue the run saved in DIR (checkpoint).")
@click.option("--max-iter", type=click.IntRange(min=1), metavar="N",
              help="Iteration limit (overrides stop.max_iter).")
@click.option("--dump-config", is_flag=True,
              help="Print the config as an editable TOML file (a preset as shipped, a file "
                   "with its defaults filled in) and exit.")
def optimize(config_path: Path | None, preset: str | None, out_dir: Path | None, force: bool,
             quiet: bool, resume: bool, max_iter: int | None, dump_config: bool) -> None:
    """Optimize the design described by CONFIG (TOML; see docs/config.md) or a preset.

    Writes to DIR: design.vtu (density, displacement or temperature, von Mises), design_NNNN.vtu
    every output.every iterations (design.pvd series), design.png, convergence.png,
    history.csv, summary.json, the resolved config.toml and checkpoint.npz. Ctrl-C saves
    and exits; --resume continues exactly where the run stopped.
    """
    from fesens.config import dumps, preset_text
    from fesens.workflow import run_optimization

    if dump_config and preset is not None and config_path is None:
        click.echo(preset_text(preset), nl=False)
        return
    if resume and force:
        raise click.UsageError("--resume continues a run and --force starts over; pick one")
    config = _load(config_path, preset, optimize=True)
    if max_iter is not None:
        config.data["stop"]["max_iter"] = max_iter
    if dump_config:
        click.echo(dumps(config.data), nl=False)
        return
    out_dir = out_dir or Path("results") / config.name
    extra = [f"--max-iter {max_iter}"] if max_iter is not None else []
    run_optimization(config, out_dir, resume=resume, force=force, echo=_echo(quiet),
                     command=_command("optimize", config_path, preset, *extra))


@cli.command()
@_source_options
@_output_options
def solve(config_path: Path | None, preset: str | None, out_dir: Path | None, force: bool,
          quiet: bool) -> None:
    """Solve the model of CONFIG (or a preset) with full material; no optimization.

    Writes to DIR: solution.vtu (displacement or temperature, von Mises, stress or heat
    flux), solution.json (compliance, extrema, reactions) and, in 2D, solution.png.
    """
    from fesens.workflow import run_solve

    config = _load(config_path, preset, optimize=False)
    out_dir = out_dir or Path("results") / f"{config.name}-solve"
    run_solve(config, out_dir, force=force, echo=_echo(quiet),
              command=_command("solve", config_path, preset))


@cli.command()
@_source_options
@click.option("--wrt", required=True,
              type=click.Choice(["density", "E", "nu", "conductivity", "loads"]),
              help="Differentiate with respect to the density scale, E or nu (elasticity), "
                   "the conductivity (heat) per cell, or the load magnitudes.")
@click.option("--objective", "objective", metavar="NAME",
              help="compliance, thermal_compliance, displacement, temperature, stress_pnorm "
                   "or stress_ks [default: the config's objective, else compliance].")
@_output_options
def sensitivity(config_path: Path | None, preset: str | None, wrt: str, objective: str | None,
                out_dir: Path | None, force: bool, quiet: bool) -> None:
    """Exact gradient of an objective of CONFIG's model (one adjoint solve).

    Writes to DIR: sensitivity.vtu (the gradient field as cell data, with the solution),
    sensitivity.json and, for --wrt loads, sensitivity.csv (one row per named load);
    sensitivity.png for a 2D field.
    """
    from fesens.workflow import run_sensitivity

    config = _load(config_path, preset, optimize=False)
    out_dir = out_dir or Path("results") / f"{config.name}-sensitivity"
    run_sensitivity(config, out_dir, wrt=wrt, objective=objective, force=force,
                    echo=_echo(quiet), command=_command("sensitivity", config_path, preset))


def _register_study() -> None:
    from fesens.study.cli import study_command

    cli.add_command(study_command)


_register_study()


def main() -> None:
    """Console-script entry point: exit 2 for bad input, 1 for numerical failures."""
    try:
        code = cli(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except NUMERICAL as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except (FesensError, ValueError, OSError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
