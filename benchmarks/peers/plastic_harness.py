"""What every code's case process of ``bench_plasticity_peers.py`` measures, and how.

The same measurements as :mod:`harness` (the finite-strain peers'), for the J2-plastic block
of :mod:`plastic_block`. A code's script builds its model and hands two functions to
:func:`serve`:

* ``forward(theta) -> reactions``: the whole load history, nothing recorded for a gradient;
  ``reactions`` is the top face's reaction ``F_n`` at every load factor, shape ``(N + 1,)``;
* ``value_and_grad(theta) -> (F, gradient)``: the same history as the code runs it when a
  gradient is wanted, then its adjoint; ``F`` the last reaction, ``gradient`` ``dF/dθ`` of
  shape ``(n_cells,)``;

and, optionally, functions returning more entries of the result (e.g. what its last run
did), called at the end.

:func:`serve` then measures, in this fresh process: the set-up, one cold call of each (JAX
compiles then), ``repeats`` warm calls of each (medians), the peak resident memory of a warm
forward and of a warm gradient evaluation above what is resident before it, the process's
whole ``ru_maxrss``, and optionally a central-difference check of the gradient along a fixed
random direction. It prints one ``BENCH-RESULT`` line of JSON.

The measuring itself is :mod:`harness`'s (:func:`harness.measure_problem`); only the
standard library, numpy, :mod:`harness` and ``_common``'s measuring helpers (importable from
the peers' environment).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from harness import Build, case_spec, measure_problem, print_result
from plastic_block import FD_STEP, PlasticBlock, gradient_direction

Forward = Callable[[np.ndarray], np.ndarray]
ValueAndGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]


def serve(code: str, versions: dict[str, str], build: Build) -> None:
    """Run the case given by ``--case`` with the model ``build(problem)`` makes; print the
    result line."""
    print_result(measure(code, versions, build, case_spec("bench_plasticity_peers.py",
                                                          "8x8x8")))


def measure(code: str, versions: dict[str, str], build: Build, spec: dict[str, Any]
            ) -> dict[str, Any]:
    """Measure the case ``spec`` (``size``, ``repeats``, ``check``) with the model
    ``build(problem)`` makes, in this process (see the module docstring)."""
    return measure_problem(PlasticBlock.parse(spec["size"]), code, versions, build, spec,
                           fd_step=FD_STEP, direction=gradient_direction,
                           scalar=lambda reactions: float(np.asarray(reactions)[-1]),
                           entries=_reaction_entries)


def _reaction_entries(reactions: np.ndarray, value: float) -> dict[str, Any]:
    """The reaction history of a warm forward, its last reaction and the gradient run's."""
    return {"reactions": np.asarray(reactions, dtype=float).tolist(),
            "reaction": float(np.asarray(reactions)[-1]),
            "reaction_from_gradient_run": float(value)}
