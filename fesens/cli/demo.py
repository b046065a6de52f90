"""``fesens demo``: the bundled L-bracket solve (see :mod:`fesens.demo`)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
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
