"""The ``fesens`` command line (click): thin commands whose docstrings are their help."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from fesens import __version__
from fesens.errors import FesensError, SolverError


@click.group()
@click.version_option(__version__, prog_name="fesens")
def cli() -> None:
    """fesens: finite-element solves and their exact gradients."""


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


def main() -> None:
    """Console-script entry point: exit 2 for bad input, 1 for numerical failures."""
    try:
        cli(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except SolverError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except (FesensError, ValueError, OSError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
