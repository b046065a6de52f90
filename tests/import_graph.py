"""The import structure of ``fesens``, module by module: cycles, wrong-way imports, sizes.

``python -m tests.import_graph [ROOT]`` prints, for the tree at ``ROOT`` (default: this
checkout):

* the **cycles**: strongly connected groups of modules that import each other, through
  imports that run (module level or inside a function) and, separately, counting the
  annotation-only imports under ``if TYPE_CHECKING:`` too;
* the **wrong-way imports**: a package importing a higher layer (``LAYERS`` of
  ``tests/test_architecture.py``) and, inside ``fesens.fem``, a subpackage importing one
  above it in ``FEM_LAYERS``;
* the **imports inside functions** (each a candidate for a hidden cycle);
* the **modules over 400 lines**.

``tests/test_architecture.py`` asserts the same facts on today's tree.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

#: Subpackages of ``fesens.fem``, low to high: one may import its own and those before it.
#: Those of one entry may import each other (the assembly reads the fields of the post-
#: processing, a model's solver choice asks the partition for its ranks).
FEM_LAYERS: tuple[tuple[str, ...], ...] = (
    ("elements",), ("integrals", "assembly", "post"), ("model", "nonlinear", "partition"),
    ("analysis", "transient"),
)
FEM_LEVEL = {name: level for level, names in enumerate(FEM_LAYERS) for name in names}

BIG_MODULE_LINES = 400


def module_name(path: str) -> str:
    """``"fesens/fem/model/linear.py"`` -> ``"fesens.fem.model.linear"``."""
    parts = list(Path(path).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, in_function: bool = False, annotation: bool = False
          ) -> Iterator[tuple[ast.AST, bool, bool]]:
    """``(node, inside a function, under TYPE_CHECKING)`` for ``node`` and its descendants."""
    yield node, in_function, annotation
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.body:
            yield from _walk(child, in_function, True)
        for child in node.orelse:
            yield from _walk(child, in_function, annotation)
        return
    inner = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    for child in ast.iter_child_nodes(node):
        yield from _walk(child, inner, annotation)


def imports(root: Path) -> Iterator[tuple[str, int, str, bool, bool]]:
    """``(module, line, imported fesens module, in a function, annotation only)``."""
    files = {p.relative_to(root).as_posix(): p for p in sorted((root / "fesens").rglob("*.py"))}
    modules = {module_name(path) for path in files}
    for path, file in files.items():
        module = module_name(path)
        package = module.split(".") if path.endswith("__init__.py") else module.split(".")[:-1]
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=path)
        for node, in_function, annotation in _walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                parts = package[: len(package) - node.level + 1] if node.level else []
                base = ".".join([*parts, *([node.module] if node.module else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for target in dict.fromkeys(targets):
                while target not in modules and "." in target:
                    target = target.rsplit(".", 1)[0]
                if target in modules and target != module and target.startswith("fesens"):
                    yield module, node.lineno, target, in_function, annotation


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    limit = sys.getrecursionlimit()  # the search recurses once per module on a path
    sys.setrecursionlimit(max(10_000, limit))
    try:
        for node in sorted(edges):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(groups, key=lambda g: (-len(g), g))


def cycles(root: Path, with_annotations: bool) -> list[list[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for module, _, target, _, annotation in imports(root):
        if with_annotations or not annotation:
            edges[module].add(target)
    return strongly_connected(edges)


def _fem_part(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "fem" else None


def wrong_way(root: Path) -> list[str]:
    """Run-time imports against the package layers or ``FEM_LAYERS``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.test_architecture import layer_problem

    found = []
    for module, line, target, _, annotation in imports(root):
        if annotation:
            continue
        path = module.replace(".", "/") + ".py"
        why = layer_problem(path, target)
        source, imported = _fem_part(module), _fem_part(target)
        if (why is None and source and imported and source != imported
                and FEM_LEVEL.get(imported, 0) > FEM_LEVEL.get(source, 0)):
            why = f"fesens.fem.{source} imports the higher fesens.fem.{imported}"
        if why is not None:
            found.append(f"{module}:{line} -> {target}: {why}")
    return found


def function_imports(root: Path) -> list[str]:
    """Imports of fesens modules written inside functions (run time only)."""
    return [f"{module}:{line} -> {target}" for module, line, target, inside, annotation
            in imports(root) if inside and not annotation]


def big_modules(root: Path, limit: int = BIG_MODULE_LINES) -> list[tuple[str, int]]:
    sizes = [(p.relative_to(root).as_posix(), len(p.read_text(encoding="utf-8").splitlines()))
             for p in sorted((root / "fesens").rglob("*.py"))]
    return sorted(((path, n) for path, n in sizes if n > limit), key=lambda x: -x[1])


def report(root: Path) -> str:
    lines = []
    for label, annotated in (("run-time imports", False), ("with annotation imports", True)):
        groups = cycles(root, annotated)
        lines.append(f"cycles ({label}): {len(groups)}")
        lines += [f"  {len(g)} modules: {', '.join(g)}" for g in groups]
    wrong = wrong_way(root)
    lines.append(f"wrong-way imports: {len(wrong)}")
    lines += [f"  {w}" for w in wrong]
    inside = function_imports(root)
    lines.append(f"imports inside functions: {len(inside)}")
    big = big_modules(root)
    lines.append(f"modules over {BIG_MODULE_LINES} lines: {len(big)}")
    lines += [f"  {path} ({n})" for path, n in big]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]))
