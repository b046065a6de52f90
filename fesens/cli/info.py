"""Commands that print what fesens has: ``info``, ``presets`` and ``docs``."""

from __future__ import annotations

from importlib import resources

import click

from fesens import __version__

#: The references shipped inside the package (``fesens/docs/*.md``).
DOCS = resources.files("fesens") / "docs"
DOC_TOPICS = sorted(entry.name.removesuffix(".md") for entry in DOCS.iterdir()
                    if entry.name.endswith(".md"))


@click.command()
def info() -> None:
    """Print the version, the available solver backends, the BLAS in use, how many
    threads fesens gives the solvers and the GPU of the matrix-free gmg's device = "gpu"."""
    from fesens.solvers import available_solvers
    from fesens.sysinfo import blas_description, gpu_description, thread_lines

    click.echo(f"fesens {__version__}")
    click.echo(f"solvers: {', '.join(available_solvers())}")
    click.echo(f"BLAS (SuiteSparse): {blas_description()}")
    for line in thread_lines():
        click.echo(line)
    click.echo(f"GPU: {gpu_description()}")


@click.command()
def presets() -> None:
    """List the built-in problems, each described from its keys: mesh, physics, analysis,
    objective, constraints, penalization, filter, projection, manufacturing, optimizer (run
    one with `fesens optimize --preset NAME`, print its file with --dump-config)."""
    from fesens.config import preset_summaries

    summaries = preset_summaries()
    width = max(map(len, summaries))
    for name, line in summaries.items():
        click.echo(f"{name:<{width}}  {line}")


def doc_title(topic: str) -> str:
    """The first line of a guide, without its Markdown ``#``."""
    first = (DOCS / f"{topic}.md").read_text(encoding="utf-8").split("\n", 1)[0]
    return first.lstrip("# ").strip()


@click.command()
@click.argument("topic", type=click.Choice(DOC_TOPICS), required=False)
def docs(topic: str | None) -> None:
    """Print a guide shipped with fesens (Markdown), e.g. `fesens docs config`: every key
    of a config file; without TOPIC, list the guides."""
    if topic is None:
        width = max(map(len, DOC_TOPICS))
        for name in DOC_TOPICS:
            click.echo(f"{name:<{width}}  {doc_title(name)}")
        return
    click.echo((DOCS / f"{topic}.md").read_text(encoding="utf-8"), nl=False)
