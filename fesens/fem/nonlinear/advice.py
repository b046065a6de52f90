"""What a failed Newton solve should try next, decided from what happened.

:func:`~fesens.fem.nonlinear.newton.solve_steps` raises
:class:`~fesens.errors.NewtonError` when a load step fails after its cut-backs; the
advice on it names the remedy that fits the failure: a line search that cut the steps of
a Newton iteration that converges with full steps (found by trying them once more from
the last converged state), inadmissible trial states (``det F ≤ 0``, ``k ≤ 0``), a
residual that stalls or falls slowly at a large load increment (more load steps or
iterations, with their numbers), the end of the load path (a limit load: a residual that
does not fall even at the smallest increment), or a tangent solve that failed.
"""

from __future__ import annotations

import math

#: The line searches whose cut steps a failure may be blamed on.
SEARCHED = ("residual", "energy")


def advice(kind: str, line_search: str | None, increment: float, floored: bool,
           full_steps_converge: bool, residuals) -> str:
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
    residuals : sequence of float
        The residual norms of the last attempt: one that ran out of iterations needs more
        of them or smaller increments; one that stalled (no step length, no progress) at
        the smallest increment may have reached the end of the load path.
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
    falling = len(residuals) > 1 and residuals[-1] <= 0.1 * residuals[0]
    limit = ("the load path may end there (a limit load, an instability or inverted cells "
             "ahead), or the tolerance may lie below the residual's round-off (rtol=...)")
    steps = math.ceil(2.0 / increment)
    more_steps = f"steps = {steps}: increments of {1.0 / steps:.3g}"
    if kind == "iterations":
        how = (f"fell slowly (from {residuals[0]:.3g} to {residuals[-1]:.3g})" if falling
               else f"did not fall below {min(residuals):.3g}")
        n = len(residuals) - 1
        text = (f"The residual {how} in the {n} iterations of a load increment of "
                f"{increment:.3g}: give more iterations (max_iterations = {2 * n}) or more "
                f"load steps ({more_steps})")
        return text + ("" if falling or not floored else f"; if neither helps, {limit}")
    if floored:
        return limit[0].upper() + limit[1:]
    return (f"The residual stalled at a load increment of {increment:.3g}: give more load "
            f"steps ({more_steps}) or cut-backs (max_cutbacks=...)")
