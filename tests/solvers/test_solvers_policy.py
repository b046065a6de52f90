"""``auto``'s one rule (:mod:`fesens.solvers.policy`): a model, a bare matrix, a filter and
a memory estimate are decided by the same thresholds, and each choice says why."""

import pytest
from solver_helpers import laplacian_2d

from fesens.config.memory import solve_kind as config_solve_kind
from fesens.solvers import policy, solver_class

DIRECT = solver_class("auto").name


def never():
    raise AssertionError("asked although the choice does not depend on it")


def test_a_small_or_2d_problem_that_fits_is_factorized_without_asking_about_the_mesh():
    for n, dim in ((10**6, 2), (policy.DIRECT_MAX_3D_UNKNOWNS, 3)):
        choice = policy.model_choice(n, dim, 1e6, 1e9, on_lattice=never,
                                     matrix_free_refusal=never)
        assert choice == DIRECT and choice.options == {}
        assert choice.reason.endswith("factor about 1 MiB")
        assert policy.filter_choice(n, dim, never) is None


def test_beyond_the_threshold_a_lattice_gets_multigrid_else_cg():
    n = policy.DIRECT_MAX_3D_UNKNOWNS + 1
    free = policy.model_choice(n, 3, 1.0, None, on_lattice=lambda: True,
                               matrix_free_refusal=lambda: None)
    assert free == "gmg" and free.options == {"matrix_free": True}
    assembled = policy.model_choice(n, 3, 1.0, None, on_lattice=lambda: True,
                                    matrix_free_refusal=lambda: "hex27 cells")
    assert assembled == "gmg" and assembled.reason.endswith("(assembled: hex27 cells)")
    unstructured = policy.model_choice(n, 3, 1.0, None, on_lattice=lambda: False,
                                       matrix_free_refusal=never)
    assert unstructured == "cg" and "unstructured mesh" in unstructured.reason
    assert policy.filter_choice(n, 3, lambda: True) == "gmg"
    assert policy.filter_choice(n, 3, lambda: False) is None


def test_a_factor_that_does_not_fit_goes_iterative_in_2d_too():
    choice = policy.model_choice(1000, 2, 2.0 * 2**30, 2**30, on_lattice=lambda: False,
                                 matrix_free_refusal=never)
    assert choice == "cg"
    assert choice.reason.startswith("the factor of 1000 unknowns needs about 2 GiB, more "
                                    "than the 1 GiB available")


def test_several_ranks_get_petsc_and_every_name_says_whether_it_distributes():
    choice = policy.model_choice(10, 2, 1.0, None, ranks=4, on_lattice=never,
                                 matrix_free_refusal=never)
    assert choice == policy.distributed_choice(4)
    assert (choice, choice.options) == ("petsc", {"preconditioner": "amg"})
    assert choice.line() == ("solver: petsc, preconditioner=amg (auto: MPI launch on 4 "
                             "ranks: PETSc's CG + GAMG solves across them)")
    assert policy.distributes("auto") and policy.distributes("petsc")
    assert not policy.distributes("cholmod") and not policy.distributes("gmg")


def test_only_the_alias_auto_is_auto():
    assert policy.is_auto("auto")
    assert not policy.is_auto("lu") and not policy.is_auto("cholmod")
    assert not policy.is_auto(("auto", {})) and not policy.is_auto(solver_class("cg")())
    assert not policy.is_auto(policy.distributed_choice(2))


def test_how_a_backend_solves():
    assert policy.solve_kind("cholmod", {}) == "direct"
    assert policy.solve_kind("cg", {"matrix_free": True}) == "iterative"
    assert policy.solve_kind("gmg", {}) == "iterative"
    assert policy.solve_kind("gmg", {"matrix_free": True}) == "matrix_free"


def test_one_threshold_moves_every_choice(monkeypatch):
    """Lowered once, the limit changes a model's, a filter's, a matrix's and a memory
    estimate's choice alike."""
    monkeypatch.setattr(policy, "DIRECT_MAX_3D_UNKNOWNS", 100)
    assert policy.model_choice(101, 3, 1.0, None, on_lattice=lambda: True,
                               matrix_free_refusal=lambda: None) == "gmg"
    assert policy.filter_choice(101, 3, lambda: True) == "gmg"
    name, reason = policy.matrix_choice(laplacian_2d(11), 3, None)
    assert name == "cg" and "more than 100 unknowns in 3D" in reason
    box = {"type": "box", "cells": [4, 4, 4], "cell_type": "hex8"}
    assert config_solve_kind(box, {"backend": "auto", "options": {}}) == "matrix_free"
    monkeypatch.setattr(policy, "DIRECT_MAX_3D_UNKNOWNS", 10**6)
    assert config_solve_kind(box, {"backend": "auto", "options": {}}) == "direct"


@pytest.mark.parametrize("backend, kind", [("cholmod", "direct"), ("cg", "iterative")])
def test_a_named_backend_keeps_its_kind_in_the_memory_estimate(backend, kind):
    box = {"type": "box", "cells": [4, 4, 4], "cell_type": "hex8"}
    assert config_solve_kind(box, {"backend": backend, "options": {}}) == kind
