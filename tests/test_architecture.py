"""The import direction of ARCHITECTURE.md, read from the source with :mod:`ast`.

Every import of a ``fesens`` module counts, absolute or relative, at module level or
inside a function. Imports under ``if TYPE_CHECKING:`` are not counted: they are
annotations only and never run. ``python tests/test_architecture.py`` prints the
package graph of today's tree, with the wrong-way imports marked.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Layers, low to high: a package may import its own layer and the layers below it.
#: ``""`` is ``fesens/__init__.py``, which may import the base layer only.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("", "errors", "interrupts", "readonly", "openmp", "sysinfo", "mpi", "arrays"),
    ("mesh", "solvers"),
    ("ad",),
    ("fem", "interop"),
    ("physics", "objectives"),
    ("opt",),
    ("plotting", "output"),
    ("config", "study"),
    ("workflow",),
    ("cli", "demo"),
)

#: Packages of one layer that must not import each other.
INDEPENDENT: tuple[frozenset[str], ...] = (
    frozenset({"mesh", "solvers"}),
    frozenset({"physics", "objectives"}),
    frozenset({"fem", "interop"}),
)

LEVEL: dict[str, int] = {name: level for level, names in enumerate(LAYERS) for name in names}

#: Only these packages may import a third-party library (the library's one home).
HOMES: dict[str, str] = {"click": "cli", "matplotlib": "plotting", "jax": "interop",
                         "torch": "interop"}

#: Never imported anywhere in fesens (plotting draws on Figure + FigureCanvasAgg).
FORBIDDEN = ("matplotlib.pyplot", "matplotlib.pylab", "pylab")


def module_name(path: str) -> str:
    """``"fesens/fem/model/linear.py"`` -> ``"fesens.fem.model.linear"``; a package's
    ``__init__.py``
    is the package."""
    parts = list(Path(path).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def top_package(module: str) -> str:
    """``"fesens.fem.model.linear"`` -> ``"fem"``; ``"fesens"`` -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _executed(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and all its descendants except the bodies of ``if TYPE_CHECKING:``."""
    yield node
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        children: Iterable[ast.AST] = node.orelse
    else:
        children = ast.iter_child_nodes(node)
    for child in children:
        yield from _executed(child)


def imported_modules(source: str, path: str, modules: set[str]) -> Iterator[tuple[int, str]]:
    """``(line, module)`` for every import in ``source``, the text of the file ``path``.

    ``from a import b`` gives ``a.b`` if that is a module: for ``fesens``, if it is one of
    ``modules``; for other libraries it gives both ``a`` and ``a.b``, as it cannot know.
    Relative imports are resolved against ``path``.
    """
    module = module_name(path)
    package = module.split(".") if path.endswith("__init__.py") else module.split(".")[:-1]
    for node in _executed(ast.parse(source, filename=path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            parts = package[: len(package) - node.level + 1] if node.level else []
            base = ".".join([*parts, *([node.module] if node.module else [])])
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                if base.split(".")[0] != "fesens":
                    yield node.lineno, base
                    yield node.lineno, candidate
                else:
                    yield node.lineno, candidate if candidate in modules else base


def layer_problem(path: str, target: str) -> str | None:
    """Why the file ``path`` may not import the fesens module ``target``, or None."""
    source, imported = top_package(module_name(path)), top_package(target)
    where = f"fesens.{source}" if source else "fesens/__init__.py"
    if imported not in LEVEL:
        return f"{target} belongs to no layer (add fesens.{imported} to LAYERS)"
    if source == imported or LEVEL[imported] < LEVEL[source]:
        return None
    if LEVEL[imported] > LEVEL[source]:
        return (f"{where} (layer {LEVEL[source]}) imports {target} from the higher layer "
                f"{LEVEL[imported]} (fesens.{imported})")
    if frozenset({source, imported}) in INDEPENDENT:
        return (f"{where} imports {target}, but fesens.{source} and fesens.{imported} are "
                "independent")
    return None


def library_problem(path: str, target: str) -> str | None:
    """Why the file ``path`` may not import the third-party module ``target``, or None."""
    if target in FORBIDDEN or target.startswith(tuple(f"{name}." for name in FORBIDDEN)):
        return f"imports {target}: draw on Figure + FigureCanvasAgg (fesens.plotting.figure)"
    library = target.split(".")[0]
    home = HOMES.get(library)
    if home is not None and top_package(module_name(path)) != home:
        return f"imports {target}, which only fesens.{home} may import"
    return None


def problems(sources: dict[str, str], modules: set[str]) -> list[str]:
    """Every forbidden import in ``sources`` (``{path: text}``), as ``path:line: why``."""
    found = []
    for path, source in sorted(sources.items()):
        for line, target in imported_modules(source, path, modules):
            check = layer_problem if target.split(".")[0] == "fesens" else library_problem
            why = check(path, target)
            if why is not None:
                found.append(f"{path}:{line}: {why}")
    return list(dict.fromkeys(found))  # `from a import b, c` may give one reason twice


@cache
def tree() -> dict[str, str]:
    """``{path relative to the repository: text}`` of every module under ``fesens/``."""
    return {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted((ROOT / "fesens").rglob("*.py"))}


@cache
def tree_modules() -> set[str]:
    return {module_name(path) for path in tree()}


def test_every_package_is_in_a_layer():
    unplaced = sorted({top_package(m) for m in tree_modules()} - set(LEVEL))
    assert not unplaced, (f"fesens packages in no layer: {', '.join(unplaced)}; add them to "
                          "LAYERS here and to ARCHITECTURE.md")


def test_architecture_md_names_every_package():
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    missing = [name for name in LEVEL if name and not any(
        spelling in text for spelling in (f"fesens/{name}", f"fesens.{name}", f"`{name}.py`"))]
    assert not missing, f"ARCHITECTURE.md does not name: {', '.join(missing)}"


def test_imports_follow_the_layers():
    found = problems(tree(), tree_modules())
    assert not found, "forbidden imports (see ARCHITECTURE.md):\n" + "\n".join(found)


WRONG = {
    "lower imports higher, inside a function": (
        "fesens/mesh/fake.py", "def f():\n    from fesens.fem import Assembler\n",
        "fesens/mesh/fake.py:2: fesens.mesh (layer 1) imports fesens.fem from the higher "
        "layer 3"),
    "relative import": (
        "fesens/fem/elements/fake.py", "from ...physics import elasticity\n",
        "fesens/fem/elements/fake.py:1: fesens.fem (layer 3) imports "
        "fesens.physics.elasticity from the higher layer 4"),
    "independent siblings": (
        "fesens/physics/fake.py", "from fesens import objectives\n",
        "fesens/physics/fake.py:1: fesens.physics imports fesens.objectives, but fesens.physics "
        "and fesens.objectives are independent"),
    "independent siblings, plain import": (
        "fesens/solvers/fake.py", "import fesens.mesh.mesh\n",
        "but fesens.solvers and fesens.mesh are independent"),
    "the package root imports beyond the base": (
        "fesens/__init__.py", "from .mesh import Mesh\n",
        "fesens/__init__.py:1: fesens/__init__.py (layer 0) imports fesens.mesh"),
    "a package in no layer": (
        "fesens/opt/fake.py", "import fesens.nowhere\n", "fesens.nowhere belongs to no layer"),
    "click outside the cli": (
        "fesens/study/fake.py", "x = 1\nimport click\n",
        "fesens/study/fake.py:2: imports click, which only fesens.cli may import"),
    "pyplot": (
        "fesens/plotting/fake.py", "from matplotlib import pyplot as plt\n",
        "fesens/plotting/fake.py:1: imports matplotlib.pyplot: draw on Figure"),
    "matplotlib outside plotting": (
        "fesens/output/fake.py", "import matplotlib.figure\n",
        "imports matplotlib.figure, which only fesens.plotting may import"),
}


@pytest.mark.parametrize(("path", "source", "message"), WRONG.values(), ids=WRONG.keys())
def test_the_checker_finds_wrong_way_imports(path, source, message):
    found = problems({path: source}, tree_modules())
    assert len(found) == 1 and message in found[0], found


def test_the_checker_allows_downward_and_annotation_only_imports():
    source = ("from typing import TYPE_CHECKING\n"
              "import numpy as np\n"
              "from fesens.errors import MeshError\n"
              "from fesens import __version__\n"
              "from . import dofs\n"
              "from .elements import reference_element\n"
              "from fesens.ad.numpy_wrapper import getval\n"
              "if TYPE_CHECKING:\n"
              "    from fesens.physics import Elasticity\n"
              "else:\n"
              "    def f():\n"
              "        from fesens.mesh import Mesh\n")
    assert problems({"fesens/fem/fake.py": source}, tree_modules()) == []


def print_graph() -> None:
    """Each package's imports of other fesens packages, layer by layer; ``!`` marks a
    wrong-way edge."""
    edges: dict[str, set[str]] = defaultdict(set)
    modules = tree_modules()
    for path, source in tree().items():
        for _, target in imported_modules(source, path, modules):
            if target.split(".")[0] == "fesens":
                edges[top_package(module_name(path))].add(target)
    for level, names in enumerate(LAYERS):
        for name in names:
            path = f"fesens/{name}/x.py" if name else "fesens/__init__.py"
            shown = {("!" if layer_problem(path, t) else "") + (top_package(t) or "fesens"): None
                     for t in sorted(edges[name]) if top_package(t) != name}
            print(f"{level}  fesens{'.' * bool(name)}{name}: {', '.join(shown)}")
    for problem in problems(tree(), modules):
        print(problem, file=sys.stderr)


if __name__ == "__main__":
    print_graph()


#: What an addition may cost, in files of fesens (tests and docs come on top).
ADDITION_FILES = {"A physics": (2, 2), "An element": (1, 4), "An objective": (2, 4),
                  "A solver backend": (2, 2), "An optimizer": (2, 2),
                  "A command target": (1, 2), "A time scheme": (1, 1),
                  "A material law": (1, 1)}


def how_to_add() -> dict[str, str]:
    """The bullets of ARCHITECTURE.md's "How to add", by their bold title."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## How to add", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^- \*\*(.+?)\*\*(.*?)(?=^- \*\*|\Z)", section,
                           flags=re.S | re.M))


def test_how_to_add_keeps_its_file_counts():
    bullets = how_to_add()
    for title, (low, high) in ADDITION_FILES.items():
        counted = re.search(r"(\d)(?:–(\d))? files?\.", bullets[title])
        assert counted, f"ARCHITECTURE.md: {title!r} does not give its file count"
        given = (int(counted[1]), int(counted[2] or counted[1]))
        assert low <= given[0] and given[1] <= high, f"{title}: {given} files, goal {low}–{high}"


def test_how_to_add_names_files_that_exist():
    named = {path for text in how_to_add().values()
             for path in re.findall(r"`((?:fesens|tests)/[\w/]+\.\w+)`", text)}
    assert len(named) > 15
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert not missing, f"ARCHITECTURE.md's How to add names missing files: {missing}"


#: The packages that read what an optimizer, problem, filter, projection or interpolation
#: can do from the attribute its base class declares with a default, never by probing.
DECLARING_PACKAGES = ("fesens/opt/", "fesens/workflow/", "fesens/config/")
#: The probes that remain there, ``(path, attribute)``, each with its reason.
ALLOWED_PROBES = {
    ("fesens/opt/resident.py", "get"): "CuPy's copy to the host: a method of an optional "
                                       "third-party array, not a fesens object",
    ("fesens/config/stress_constraints.py", "von_mises_squared"):
        "what a physics' solution offers is the set of its methods, as the objective "
        "kinds' `reads` (fesens/config/objectives.py)",
}


def attribute_probes(source: str) -> Iterator[tuple[int, str]]:
    """``(line, attribute)`` of each ``getattr(x, "<name>", default)`` and
    ``hasattr(x, "<name>")`` in ``source`` (a name computed at run time is no probe, nor a
    ``getattr`` without a default, which fails loudly)."""
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):
            continue
        if node.func.id == "hasattr" or (node.func.id == "getattr" and len(node.args) == 3):
            yield node.lineno, node.args[1].value


def test_capabilities_are_declared_not_probed():
    found = [f"{path}:{line}: {name!r}" for path, source in tree().items()
             if path.startswith(DECLARING_PACKAGES)
             for line, name in attribute_probes(source) if (path, name) not in ALLOWED_PROBES]
    assert not found, ("declare the attribute with its default on the base class (Optimizer, "
                       "Interpolation, Projection, Filter, DesignProblem, Evaluation) and read "
                       f"it: {found}")
    stale = sorted(path for path, name in ALLOWED_PROBES
                   if name not in {n for _, n in attribute_probes(tree()[path])})
    assert not stale, f"ALLOWED_PROBES lists probes that are gone: {stale}"


@pytest.mark.parametrize(("source", "probes"), [
    ('x = getattr(problem, "bounded", False)\n', [(1, "bounded")]),
    ('if callable(getattr(cls, "mass", None)):\n    pass\n', [(1, "mass")]),
    ('y = 1\nif hasattr(interpolation, "phases"):\n    pass\n', [(2, "phases")]),
    ("value = getattr(model, name, None)\n", []),
    ('value = getattr(model, "E")\n', []),
    ("value = problem.bounded\n", []),
])
def test_the_checker_finds_probes(source, probes):
    assert list(attribute_probes(source)) == probes


def cycles(root: Path, with_annotations: bool) -> list[list[str]]:
    """:func:`import_graph.cycles` of the tree at ``root``."""
    import import_graph

    return import_graph.cycles(root, with_annotations)


def test_no_import_cycles():
    """No group of fesens modules imports each other, counting the imports that run (at
    module level or inside a function) and the annotation-only ones under ``if
    TYPE_CHECKING:``: what two modules share belongs in a lower module of its own."""
    found = cycles(ROOT, with_annotations=True)
    assert not found, ("import cycles (`python -m tests.import_graph` lists them): "
                       + "; ".join(" <-> ".join(group) for group in found))


def test_the_cycle_finder_finds_a_cycle_of_three_modules(tmp_path):
    """A toy tree: ``a → b`` at module level, ``b → c`` inside a function, ``c → a`` as an
    annotation only, and ``d → a`` outside the cycle."""
    sources = {"a": "from fesens.toy import b\n",
               "b": "def f():\n    from fesens.toy.c import g\n",
               "c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                    "    from fesens.toy.a import A\n",
               "d": "import fesens.toy.a\n"}
    (tmp_path / "fesens" / "toy").mkdir(parents=True)
    for name, source in {"__init__": "", **sources}.items():
        (tmp_path / "fesens" / "toy" / f"{name}.py").write_text(source, encoding="utf-8")
    assert cycles(tmp_path, with_annotations=True) == [
        ["fesens.toy.a", "fesens.toy.b", "fesens.toy.c"]]
    assert cycles(tmp_path, with_annotations=False) == []


def _code_strings(source: str) -> set[str]:
    """The string constants of ``source``'s code, its docstrings left out."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                                | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and id(node) not in docstrings}


@pytest.mark.parametrize(("registry", "home"), [
    ("fesens.fem.transient.schemes:TIME_SCHEMES", "fesens/fem/transient/schemes.py"),
    ("fesens.physics.hyperelastic_law:HYPERELASTIC_LAWS",
     ("fesens/physics/hyperelastic_law.py", "fesens/physics/rubber_laws.py")),
])
def test_a_record_is_named_in_its_module_only(registry, home):
    """"A time scheme: 1 file", "A material law: 1 file": the name of every record of the
    registry is written in the code of its module and nowhere else in fesens (everything
    else reads the registry), so that adding one touches that file."""
    import importlib

    module, name = registry.split(":")
    names = set(getattr(importlib.import_module(module), name))
    homes = (home,) if isinstance(home, str) else home  # the laws: Lamé's, and the rubber ones
    elsewhere = {path: sorted(names & _code_strings(source))
                 for path, source in tree().items() if path not in homes}
    assert not {path: found for path, found in elsewhere.items() if found}
    assert names <= set().union(*(_code_strings(tree()[path]) for path in homes))
