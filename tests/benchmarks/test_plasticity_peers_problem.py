"""The problem of benchmarks/bench_plasticity_peers.py (benchmarks/peers/plastic_block.py):
its history, its mesh and supports as fesens builds them, and its first increment against
the bounds of the minimum potential energy."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path[:0] = [str(BENCHMARKS), str(BENCHMARKS / "peers")]

plastic_block = pytest.importorskip("plastic_block")
bench = pytest.importorskip("bench_plasticity_peers")


def test_history_loads_unloads_and_reverses():
    factors = plastic_block.FACTORS
    steps = np.diff(factors)
    peak = int(np.argmax(factors))
    assert factors[0] == 0.0 and factors.size == 16
    assert factors[peak] == 1.0 and factors[-1] == -1.0
    assert np.all(steps[:peak] > 0) and np.all(steps[peak:] < 0)


def test_problem_file_imports_numpy_only():
    """The peers import it in their own environment: numpy and the standard library."""
    tree = ast.parse((BENCHMARKS / "peers" / "plastic_block.py").read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, ast.Import | ast.ImportFrom)
                for alias in (node.names if isinstance(node, ast.Import)
                              else [ast.alias(node.module or "")])}
    assert imported <= {"__future__", "dataclasses", "numpy"}


def test_fesens_block_numbers_and_supports_as_the_problem():
    """FesensBlock refuses to build unless fesens's box numbers nodes and cells as the
    problem does and constrains the same dofs; the reaction dofs are the top face's z."""
    problem = plastic_block.PlasticBlock(3, 2, 2)
    block = bench.FesensBlock(problem, "auto")
    points = problem.points()
    assert block.top.size == 4 * 3
    assert np.all(np.isin(block.top, block.model.constrained_dofs))
    assert np.allclose(points[block.top // 3, 2], plastic_block.LENGTH)


def test_first_increment_between_the_uniaxial_stress_and_strain_bounds():
    """The first increment (strain 0.2 %, below σ_y / E = 0.36 %) is elastic. By the
    principle of minimum potential energy, adding kinematic constraints stiffens: the
    clamped block lies between the same block on rollers (uniaxial stress, ``E ε A``) and
    the block held laterally everywhere (uniaxial strain, ``(λ + 2μ) ε A``)."""
    problem = plastic_block.PlasticBlock(2, 2, 2)
    reactions = bench.FesensBlock(problem, "auto").forward(np.ones(problem.n_cells))
    factor = plastic_block.FACTORS[1]
    strain = factor * plastic_block.AMPLITUDE / plastic_block.LENGTH
    area = plastic_block.LENGTH**2
    assert strain < plastic_block.YIELD_STRESS / plastic_block.YOUNG
    confined = (plastic_block.LAMBDA + 2 * plastic_block.SHEAR) * strain * area
    assert plastic_block.uniaxial_reaction(factor) < reactions[1] < confined
