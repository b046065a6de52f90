"""The README and the references of ``fesens docs``, followed literally: every ```bash,
```shell and ```python block of README.md and fesens/docs/*.md runs, line by line and block
by block in the order printed, in one temporary copy of the project (scikit-fem's
examples-are-tests, applied to the documentation). A ```toml block whose first line is a
comment naming a file (``# bracket.toml``) is saved under that name first, as the text
asks the reader to do.

Shell lines run with this interpreter's ``bin`` first on PATH (so ``fesens`` is the one
under test); Python blocks run as a script in the copy. Only the lines of ``SKIPPED`` are
left out, each for the reason given there. Every ```toml block, saved as a file, must pass
the config (or study) checks."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mpi_launch import launch_environment

from fesens.solvers.petsc import petsc4py_available

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "fesens" / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```(bash|shell|python)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
SAVED_TOML = re.compile(r"^```toml[ \t]*\n# ([\w.-]+\.toml)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
README_LINES = 200                      # a front page: what, install, one example, links
STEP_TIMEOUT = 900.0                    # seconds: generous, for a loaded machine (the slowest
#                                        step, a 2-rank MBB run, takes 50 s on an idle one)

SKIPPED = {                             # a pattern found in a shell line: why it is not run
    r"^make demo\b": "machine set-up (apt packages, .venv); the job it then runs is the "
                     "`fesens optimize --preset mbb --out results/mbb --force` line, run here",
    r"^make test\b": "machine set-up (apt packages, .venv), then the suite this test is in",
    r"^pip install\b": "installs fesens into the environment this test already runs in",
    r"--scheduler\s": "needs a running Dask scheduler at the address printed",
    r"cantilever3d_million": "the million-element run: about an hour and 4 GB; the solvers "
                             "guide shows its picture (its config is checked "
                             "by tests/config/test_million_example.py)",
    r"^make petsc\b": "machine set-up (apt packages, petsc4py built into .venv); CI runs it "
                      "before the tests, so the mpirun line below runs there",
}
#: Lines that run only where what they need is installed: (pattern, needed, why).
NEEDS = [(r"^mpirun\b", lambda: petsc4py_available() and shutil.which("mpirun") is not None,
          "needs petsc4py and mpirun (make petsc)")]

CHECKED = [                             # (a fragment of a step, what its output must contain)
    ("fesens optimize --preset mbb --out results/mbb",       # the run the README prints
     "converged after 144 iterations: objective 233.715, volume 0.5000"),
    ("peak deflection", "peak deflection 0.572 mm (at half density 4.574 mm)"),
    ("taylor_test(J, x)", "convergence rate: 2.000"),
]


def _shell_lines(code: str) -> list[str]:
    """The commands of a shell block: one per line, ``\\`` continuations joined, blank and
    comment-only lines dropped."""
    commands, pending = [], ""
    for line in code.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command = (pending + line).strip()
        pending = ""
        if command and not command.startswith("#"):
            commands.append(command)
    return commands


def _steps() -> list:
    """One pytest param per shell line or Python block, in document order."""
    steps = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        name = document.relative_to(ROOT).as_posix()
        blocks = sorted([*BLOCK.finditer(text), *SAVED_TOML.finditer(text)],
                        key=lambda match: match.start())
        for match in blocks:
            language, code = match.groups()
            line_number = text.count("\n", 0, match.start()) + 2
            if language.endswith(".toml"):
                steps.append(pytest.param("file", (language, code), id=f"{name}:{language}"))
                continue
            if language == "python":
                steps.append(pytest.param("python", code, id=f"{name}:{line_number}:python"))
                continue
            for command in _shell_lines(code):
                marks = [pytest.mark.skip(reason=f"{command!r}: {reason}")
                         for pattern, reason in SKIPPED.items() if re.search(pattern, command)]
                marks += [pytest.mark.skipif(not needed(), reason=f"{command!r}: {reason}")
                          for pattern, needed, reason in NEEDS if re.search(pattern, command)]
                steps.append(pytest.param("shell", command, marks=marks[:1],
                                          id=f"{name}:{command.split('#')[0].strip()}"))
    return steps


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory) -> Path:
    """The files git tracks, copied as they are in the working tree."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                                check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"the project is not a git checkout (git ls-files: {error})")
    copy = tmp_path_factory.mktemp("project")
    for relative in filter(None, listed):
        source = ROOT / relative
        if source.is_file():
            (copy / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / relative)
    return copy


def _environment() -> dict[str, str]:
    # the tests' mpirun environment (mpi_launch.py); Open MPI refuses to start as root (CI's
    # user) unless told
    environment = launch_environment()
    environment.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    environment["PATH"] = os.pathsep.join([str(Path(sys.executable).parent),
                                           environment.get("PATH", "")])
    return environment


@pytest.mark.parametrize("kind, code", _steps())
def test_documented_step_runs(kind, code, project_copy):
    if kind == "file":
        file_name, text = code
        (project_copy / file_name).write_text(text, encoding="utf-8")
        return
    if kind == "python":
        script = project_copy / "_readme_block.py"
        script.write_text(code, encoding="utf-8")
        argv = [sys.executable, str(script)]
    else:
        argv = ["bash", "-c", code]
    result = subprocess.run(argv, cwd=project_copy, env=_environment(), capture_output=True,
                            text=True, timeout=STEP_TIMEOUT)
    assert result.returncode == 0, (
        f"exit code {result.returncode}\n{code}\n--- stdout\n{result.stdout[-3000:]}"
        f"\n--- stderr\n{result.stderr[-3000:]}")
    for fragment, expected in CHECKED:
        if fragment in code:
            assert expected in result.stdout, f"{expected!r} not printed by\n{code}"


def test_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_LINES, f"README.md has {lines} lines: move details to fesens/docs"


def test_readme_links_every_example():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for example in sorted((ROOT / "examples").glob("*.py")):
        assert f"(examples/{example.name})" in readme or f'"examples/{example.name}"' in readme, \
            example.name


def test_every_check_is_used():
    """A check whose step is no longer documented is stale."""
    texts = [document.read_text(encoding="utf-8") for document in DOCUMENTS]
    for fragment, _ in CHECKED:
        assert any(fragment in code for text in texts for _, code in BLOCK.findall(text)), \
            fragment


def test_every_skip_is_used():
    """A skip pattern that no longer matches a documented line is stale."""
    commands = [command for document in DOCUMENTS
                for language, code in BLOCK.findall(document.read_text(encoding="utf-8"))
                if language != "python" for command in _shell_lines(code)]
    for pattern in SKIPPED:
        assert any(re.search(pattern, command) for command in commands), pattern


TOML_BLOCK = re.compile(r"^```toml[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
TOML_PLACES = {"README.md": ".",                    # saved where its relative paths lead
               "fesens/docs/config.md": ".",
               "fesens/docs/nonlinear.md": ".",
               "fesens/docs/topology.md": ".",
               "fesens/docs/transient.md": ".",
               "fesens/docs/study.md": "examples"}   # next to its base = "bracket.toml"


@pytest.mark.parametrize("document", sorted(TOML_PLACES))
def test_documented_config_files_are_valid(document, project_copy):
    """Every ```toml block, saved as a file, passes the checks `fesens` runs before any work:
    those of `fesens optimize` for a config with an optimize-only section, else those of
    `fesens solve` and `sensitivity`."""
    from fesens.config import load_config
    from fesens.config.schema import OPTIMIZATION_SECTIONS
    from fesens.study.config import load_study

    blocks = TOML_BLOCK.findall((ROOT / document).read_text(encoding="utf-8"))
    assert blocks, f"no toml block in {document}"
    for number, text in enumerate(blocks):
        path = project_copy / TOML_PLACES[document] / f"_documented_{number}.toml"
        path.write_text(text, encoding="utf-8")
        if document.endswith("study.md"):
            load_study(path)
            continue
        optimize = any(re.search(rf"^\[+{section}\b", text, flags=re.M)
                       for section in OPTIMIZATION_SECTIONS)
        load_config(path, optimize=optimize)


def test_every_document_with_toml_is_placed():
    documents = {d.relative_to(ROOT).as_posix() for d in DOCUMENTS
                 if TOML_BLOCK.search(d.read_text(encoding="utf-8"))}
    assert documents == set(TOML_PLACES)
