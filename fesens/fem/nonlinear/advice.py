"""What a failed Newton solve should try next, decided from what happened.

:func:`~fesens.fem.nonlinear.newton.solve_steps` raises
:class:`~fesens.errors.NewtonError` when a load step fails after its cut-backs; the
advice on it names the remedy that fits the failure: a line search that cut the steps of
a Newton iteration that converges with full steps (found by trying them once more from
the last converged state), inadmissible trial states (``det F ≤ 0``, ``k ≤ 0``), a
residual that stalls at a large load increment (more load steps, with their number), the
end of the load path (a limit load), or a tangent solve that failed.
"""

from __future__ import annotations

import math

#: The line searches whose cut steps a failure may be blamed on.
SEARCHED = ("residual", "energy")


def advice(kind: str, line_search: str | None, increment: float, floored: bool,
           full_steps_converge: bool) -> str:
    """The advice sentence(s) of a failed solve.

    Parameters
    ----------
    kind : str
        What went wrong in the last attempt (``StepFailed.kind``: ``"inadmissible"``,
        ``"nan"``, ``"stalled"``, ``"iterations"``, ``"no progress"``, ``"solver"``,
        ``"start"``).
    line_search : str or None
        The solve's line search.
    increment : float
        The load increment of the last attempt.
    floored : bool
        Whether the increment would fall below its floor (``1/steps / 2^max_cutbacks``).
    full_steps_converge : bool
        Whether full Newton steps converge from the last converged state at the load
        factor that failed (tried only after a search among :data:`SEARCHED` failed).
    """
    if full_steps_converge:
        return (f"The {line_search} line search cut steps that full Newton steps take: "
                f"they converge from the last converged state at this load, so give "
                f"line_search = \"none\" (or \"auto\", full steps first)")
    if kind in ("inadmissible", "start"):
        return ("The trial states left the law's domain (inadmissible, named above: "
                "det F <= 0, an inverted element, or k <= 0): more load steps keep the "
                "iterates near admissible states; refine the mesh near the named cells or "
                "spread the load over an area instead of a point")
    if kind == "solver":
        return ("The tangent solve failed: a backend that factorizes indefinite or "
                "non-symmetric tangents (solver = \"lu\") passes where a Cholesky one stops")
    if floored:
        return ("The load path may end there (a limit load, an instability or inverted "
                "cells ahead), or the tolerance may lie below the residual's round-off "
                "(rtol=...)")
    steps = math.ceil(2.0 / increment)
    return (f"The residual stalled at a load increment of {increment:.3g}: give more load "
            f"steps, steps = {steps} (increments of {1.0 / steps:.3g}), or more cut-backs "
            f"(max_cutbacks=...) or iterations (max_iterations=...)")
