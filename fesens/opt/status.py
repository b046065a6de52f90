"""How a design optimization ended: its status, the reason in words, and its exit code.

A run's status is one of :data:`STATUSES`, decided from its last evaluation by
:func:`decide_status`, in this order:

``degenerate``
    The design holds (next to) no material: its physical volume fraction is below
    :data:`DEGENERATE_FRACTION` of its volume limit. Such a design carries no load (an
    all-void start that never filled, a mechanism whose cells all emptied); whatever the stop
    rule said, it is no result. A NaN or infinite objective or gradient is not a status: the
    loop raises :class:`~fesens.errors.NonFiniteError` at the iteration it appears.
``max_iter``
    The iteration limit ended the run before the stop rule held (the design still changing,
    a continuation not finished or not yet held at its final value for its
    ``final_iterations``, or a robust problem's dilated volume limit not current).
``infeasible``
    The stop rule held but a constraint is violated by more than ``constraint_tol``.
``converged``
    The stop rule held, every constraint is satisfied within ``constraint_tol`` and the
    design is not degenerate.

A constraint ``g_i ≤ 0`` is satisfied within ``tol`` when ``g_i ≤ tol`` in the scaled form
the optimizer sees (:class:`~fesens.opt.problem.Evaluation`): the volume's ``V/V_Ω − f`` of
the physical design (a fraction of the domain's volume; a robust problem's blueprint, whose
optimizer sees the dilated design's), every other constraint's ``response / limit − 1`` (a
fraction of its limit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fesens.opt.problem import DesignProblem
from fesens.opt.responses import Evaluation

#: A design whose physical volume fraction is below this fraction of its volume limit is
#: degenerate: one hundredth of the material it may use carries no load (a member one cell
#: wide across a 100 x 100 grid already takes a whole hundredth of the domain).
DEGENERATE_FRACTION = 0.01
#: The default of ``constraint_tol`` (``[stop] constraint_tol``): the largest constraint
#: violation, in the scaled form above, that still counts as satisfied.
CONSTRAINT_TOL = 1e-3


@dataclass(frozen=True)
class Status:
    """One way a run can end.

    Attributes
    ----------
    name : str
        What ``summary.json``'s ``status`` says.
    exit_code : int
        The exit code of ``fesens optimize`` that ends so.
    meaning : str
        One line for the docs and the ``--help`` text.
    """

    name: str
    exit_code: int
    meaning: str


#: Every status a finished run can have, by name.
STATUSES: dict[str, Status] = {status.name: status for status in (
    Status("converged", 0, "the stop rule held, the constraints are met within "
                           "stop.constraint_tol and the design is not degenerate"),
    Status("max_iter", 0, "stop.max_iter ended the run before the stop rule held "
                          "(the last line says NOT CONVERGED)"),
    Status("infeasible", 3, "the stop rule held but a constraint is violated by more than "
                            "stop.constraint_tol"),
    Status("degenerate", 4, "the design holds (next to) no material: no load path"),
)}


@dataclass(frozen=True)
class Ending:
    """How one run ended: its :class:`Status` name and why, in words.

    Attributes
    ----------
    status : str
        A key of :data:`STATUSES`.
    reason : str
        Empty for ``converged`` and ``max_iter`` (the outcome sentence says why); otherwise
        what made it so, with the numbers (the violated constraints, the volume).
    """

    status: str
    reason: str = ""

    @property
    def converged(self) -> bool:
        """Whether the run converged (:data:`STATUSES`' ``converged``)."""
        return self.status == "converged"

    @property
    def exit_code(self) -> int:
        """The exit code of ``fesens optimize`` for this ending."""
        return STATUSES[self.status].exit_code


def decide_status(problem: DesignProblem, evaluation: Evaluation, stopped: bool,
                  constraint_tol: float = CONSTRAINT_TOL) -> Ending:
    """The :class:`Ending` of a run whose last evaluation is ``evaluation``.

    Parameters
    ----------
    problem : DesignProblem
        Its ``volume_fraction`` is the volume limit; its ``constraints`` name the extra
        constraints (``evaluation.constraints[1:]``).
    evaluation : Evaluation
        The run's final evaluation (numbers global in a distributed run).
    stopped : bool
        Whether the loop's stop rule held (the design change below ``stop.tol_change`` once
        every continuation has held its final value for its ``final_iterations`` and the
        problem is settled, :meth:`~fesens.opt.problem.DesignProblem.settled`) rather than
        the iteration limit ending the run.
    constraint_tol : float
        The largest scaled violation ``g_i`` that still counts as satisfied, ≥ 0.

    Returns
    -------
    Ending
    """
    if not constraint_tol >= 0:
        raise ValueError(f"constraint_tol must be a number ≥ 0, got {constraint_tol!r}")
    limit = problem.volume_fraction
    volume = float(evaluation.volume_fraction)
    if volume < DEGENERATE_FRACTION * limit:
        return Ending("degenerate", f"volume fraction {volume:.3g}, below "
                                    f"{DEGENERATE_FRACTION:g} of its limit {limit:g}: the "
                                    "design holds (next to) no material and carries no load")
    if not stopped:
        return Ending("max_iter")
    violated = violations(problem, evaluation, constraint_tol)
    if violated:
        return Ending("infeasible", f"{'; '.join(violated)} (beyond stop.constraint_tol = "
                                    f"{constraint_tol:g})")
    return Ending("converged")


def violations(problem: DesignProblem, evaluation: Evaluation,
               constraint_tol: float = CONSTRAINT_TOL) -> list[str]:
    """One phrase per constraint of ``evaluation`` violated by more than ``constraint_tol``
    (``"volume_fraction 0.37 (limit 0.3)"``); empty when all are satisfied within it."""
    named = [("volume_fraction", float(evaluation.volume_fraction), problem.volume_fraction),
             *((c.name, float(evaluation.extras.get(c.name, np.nan)), c.limit)
               for c in problem.constraints)]
    phrases = []
    scaled = np.asarray(evaluation.constraints, dtype=float).copy()
    # the volume limit the user set holds for the physical design; a problem may constrain
    # another one in its place (a robust problem: the dilated design against a limit it
    # updates so that the blueprint meets the user's), so the physical volume decides
    scaled[0] = named[0][1] - named[0][2]
    for i, g in enumerate(scaled):
        if g <= constraint_tol:
            continue
        if i < len(named):
            name, value, limit = named[i]
            phrases.append(f"{name} {value:.4g} (limit {limit:.4g})")
        else:  # a constraint the problem adds without a name
            phrases.append(f"constraint {i + 1} exceeded by {g:.3g}")
    return phrases
