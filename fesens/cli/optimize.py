"""``fesens optimize``: a design optimization from a config file or a preset."""

from __future__ import annotations

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


@click.command()
@source_options
@output_options(default_out="results/NAME")
@click.option("--resume", is_flag=True, help="Continue the run saved in DIR (checkpoint).")
@click.option("--max-iter", type=click.IntRange(min=1), metavar="N",
              help="Iteration limit (overrides stop.max_iter).")
@click.option("--dump-config", is_flag=True,
              help="Print the config as an editable TOML file (a preset as shipped, a file "
                   "with its defaults filled in) and exit.")
def optimize(config_path: Path | None, preset: str | None, out_dir: Path | None, force: bool,
             quiet: bool, resume: bool, max_iter: int | None, dump_config: bool) -> None:
    """Optimize the design described by CONFIG (TOML; see `fesens docs config`) or a preset.

    Writes to DIR: design.vtu (density, displacement or temperature, von Mises), design_NNNN.vtu
    every output.every iterations (design.pvd series), design.png, convergence.png,
    history.csv, summary.json, the resolved config.toml and checkpoint.npz. Ctrl-C saves
    and exits; --resume continues exactly where the run stopped.

    \b
    Exit codes (the run's status, summary.json's "status"):
      0  converged (the design change below stop.tol_change, every constraint met
         within stop.constraint_tol), or max_iter (stop.max_iter reached first)
      1  numerical failure (solver, NaN)
      2  bad input (config, files, usage), refused before any work
      3  infeasible: stopped with a constraint violated beyond stop.constraint_tol
      4  degenerate: the design holds (next to) no material; no shape file written
      130  interrupted (Ctrl-C); the checkpoint is saved
    The results of an infeasible or degenerate run are written all the same, marked by
    their status; the last line says why.
    """
    from fesens.config import preset_text
    from fesens.config.schedules import check_schedules
    from fesens.opt.status import STATUSES
    from fesens.workflow import run_optimization

    if dump_config and preset is not None and config_path is None:
        click.echo(preset_text(preset), nl=False)
        return
    if resume and force:
        raise click.UsageError("--resume continues a run and --force starts over; pick one")
    config = load_source(config_path, preset, optimize=True)
    if max_iter is not None:  # a limit the user sets for this run: a short one is deliberate
        config.data["stop"]["max_iter"] = max_iter
    elif not resume:  # the config's own limit must let every continuation end
        check_schedules(config.data)
    if dump_config:
        click.echo(config.toml(), nl=False)
        return
    out_dir = out_dir or Path("results") / config.name
    extra = [f"--max-iter {max_iter}"] if max_iter is not None else []
    run = run_optimization(config, out_dir, resume=resume, force=force,
                           echo=echo_unless(quiet),
                           command=command_line("optimize", config_path, preset, *extra))
    status = STATUSES[run.summary["status"]]
    if status.exit_code:  # a finished run that is no result: say so, and why, last
        raise FesensCliError(f"{run.summary['outcome']}; the results in {run.folder} are "
                             f"marked status = \"{status.name}\"", status.exit_code)
