"""`fesens docs TOPIC` prints the references shipped in the package, and every help text
names documentation the user has (no repository paths such as docs/*.md)."""

import pytest
from cli_helpers import ROOT, run

from fesens.cli import cli
from fesens.cli.info import DOC_TOPICS

GUIDES = ["api", "benchmarks", "combinations", "config", "examples", "modal", "mpi",
          "nonlinear", "plasticity", "solvers", "study", "topology", "transient"]


@pytest.mark.parametrize("topic", GUIDES)
def test_docs_prints_the_shipped_reference(topic):
    result = run("docs", topic)
    assert result.exit_code == 0
    assert result.output == (ROOT / "fesens" / "docs" / f"{topic}.md").read_text(encoding="utf-8")


def test_docs_of_an_unknown_topic_is_bad_input():
    result = run("docs", "nonsense")
    assert result.exit_code == 2
    assert "config" in result.output and "study" in result.output
    assert DOC_TOPICS == GUIDES


def test_docs_without_a_topic_lists_the_guides_with_their_titles():
    result = run("docs")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines] == GUIDES
    title = (ROOT / "fesens" / "docs" / "mpi.md").read_text(encoding="utf-8").splitlines()[0]
    assert lines[GUIDES.index("mpi")].split(None, 1)[1] == title.removeprefix("# ")


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_help_names_no_repository_files(command):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "docs/" not in result.output and ".md" not in result.output


@pytest.mark.parametrize(("command", "topic"), [("optimize", "config"), ("study", "study")])
def test_help_points_to_fesens_docs(command, topic):
    assert f"see `fesens docs {topic}`" in " ".join(run(command, "--help").output.split())
