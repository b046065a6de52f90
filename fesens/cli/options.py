"""What ``optimize``, ``solve`` and ``sensitivity`` share: the CONFIG argument or --preset,
the results-folder options, and loading the config they name."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import click

from fesens.errors import FesensWarning


def source_options(function):
    """CONFIG argument and --preset option."""
    function = click.option("--preset", metavar="NAME",
                            help="A built-in problem instead of CONFIG (see `fesens presets`).")(
        function)
    return click.argument("config_path", metavar="[CONFIG]", required=False,
                          type=click.Path(dir_okay=False, path_type=Path))(function)


def output_options(default_out: str):
    """--out DIR (whose help names ``default_out``, the folder the command writes without
    it), --force and --quiet."""
    def decorate(function):
        function = click.option("--quiet", "-q", is_flag=True,
                                help="Print nothing but errors.")(function)
        function = click.option("--force", is_flag=True,
                                help="Overwrite the results of a previous run in DIR.")(function)
        return click.option("--out", "out_dir", metavar="DIR",
                            type=click.Path(file_okay=False, path_type=Path),
                            help=f"Results folder [default: {default_out}].")(function)
    return decorate


def load_source(config_path: Path | None, preset: str | None, *, optimize: bool):
    """The resolved config of CONFIG or of --preset NAME (exactly one of them)."""
    from fesens.config import load_config, load_preset

    if config_path is not None and preset is not None:
        raise click.UsageError("give either CONFIG or --preset NAME, not both")
    if config_path is None and preset is None:
        raise click.UsageError("give a CONFIG file or --preset NAME (see `fesens presets`)")
    from fesens.mpi import check_rank_count, world

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FesensWarning)
        config = (load_preset(preset, optimize=optimize) if preset is not None
                  else load_config(config_path, optimize=optimize))
    if world().is_root:
        echo_warnings(caught)
    check_rank_count(config.mesh.n_cells, config.source)
    return config


def echo_warnings(caught: list[warnings.WarningMessage]) -> None:
    """Each fesens warning of loading a config (doubtful values, a mesh file's coincident
    nodes) as one ``warning: ...`` line on stderr (also with --quiet); other warnings go on
    to Python's handler."""
    for item in caught:
        if issubclass(item.category, FesensWarning):
            click.echo(f"warning: {item.message}", err=True)
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)


def command_line(name: str, config_path: Path | None, preset: str | None, *extra: str) -> str:
    """The command that reruns this job, for the results folder's records."""
    source = f"--preset {preset}" if preset else str(config_path)
    return " ".join(["fesens", name, source, *extra])


def echo_unless(quiet: bool) -> Callable[[str], None]:
    """``click.echo``, or nothing with --quiet."""
    return (lambda line: None) if quiet else click.echo
