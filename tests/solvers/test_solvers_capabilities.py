"""Backends declare their capabilities as class attributes, and code outside
``fesens/solvers`` asks for them instead of probing with ``getattr`` or comparing names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fesens.solvers import SOLVER_ALIASES, make_solver, solver_class

ROOT = Path(__file__).resolve().parents[2] / "fesens"
CAPABILITIES = ("symmetric", "is_direct", "distributes", "needs_grid", "offers_matrix_free",
                "matrix_free")
#: ``auto`` is also a method of the eigen solve (``ModalAnalysis(method="auto")``), no solver.
EIGEN_METHOD = re.compile(r'\bmethod\s*(==|!=)\s*"auto"')


def _backend_names() -> list[str]:
    """Every name registered with ``@register_solver`` in the solver package's source."""
    pattern = re.compile(r'^@register_solver\("(\w+)"\)', re.MULTILINE)
    return sorted(name for path in (ROOT / "solvers").glob("*.py")
                  for name in pattern.findall(path.read_text()))


def _outside_solvers() -> list[tuple[Path, str]]:
    """``(path, source)`` of every module of ``fesens`` outside ``fesens/solvers``."""
    return [(path, path.read_text()) for path in sorted(ROOT.rglob("*.py"))
            if "solvers" not in path.relative_to(ROOT).parts[:1]]


@pytest.mark.parametrize("name", _backend_names())
def test_every_backend_declares_its_capabilities_as_booleans(name):
    cls = solver_class(name)
    for capability in CAPABILITIES:
        assert isinstance(getattr(cls, capability), bool), (name, capability)


def test_the_declared_capabilities():
    assert solver_class("gmg").needs_grid and solver_class("gmg").offers_matrix_free
    assert not solver_class("cg").needs_grid and not solver_class("cg").offers_matrix_free
    assert solver_class("petsc").distributes and solver_class("petsc_direct").distributes
    assert not solver_class("cholmod").distributes and not solver_class("superlu").distributes
    assert make_solver("gmg", matrix_free=True).matrix_free
    assert not make_solver("gmg").matrix_free and not make_solver("cg").matrix_free
    assert not make_solver("auto").matrix_free
    assert make_solver("cg", rtol=1e-6).rtol == 1e-6 and make_solver("gmg").rtol == 1e-8
    assert make_solver("cholmod").rtol is None and make_solver("auto").rtol is None


def test_no_capability_is_probed_with_getattr_outside_the_solvers():
    names = "|".join((*CAPABILITIES, "layout", "rtol", "device"))
    probe = re.compile(rf'(getattr|hasattr)\([^)]*"({names})"')
    found = [str(path) for path, source in _outside_solvers() if probe.search(source)]
    assert found == []


def test_no_backend_name_or_alias_is_compared_as_a_string_outside_the_solvers():
    names = "|".join((*_backend_names(), *SOLVER_ALIASES))
    compare = re.compile(rf'(==|!=)\s*"({names})"|"({names})"\s*(==|!=)')
    found = [str(path) for path, source in _outside_solvers()
             if compare.search(EIGEN_METHOD.sub("", source))]
    assert found == []


def test_a_preconditioner_built_from_a_near_null_space_is_declared():
    pytest.importorskip("pyamg")
    assert make_solver("cg", preconditioner="amg").reads_near_nullspace
    assert make_solver("minres", preconditioner="amg").reads_near_nullspace
    assert not make_solver("cg", preconditioner="jacobi").reads_near_nullspace
    assert not make_solver("superlu").reads_near_nullspace
    assert not make_solver("auto").reads_near_nullspace


def test_no_preconditioner_is_compared_as_a_string_outside_the_solvers():
    compare = re.compile(r"preconditioner\s*(==|!=|in\b)")
    found = [str(path) for path, source in _outside_solvers() if compare.search(source)]
    assert found == []
