"""The step length of one Newton iteration: backtracking on a merit function.

Along the Newton correction ``δ`` (``K_T δ = −R``) the step length ``α`` starts at 1 and
is shortened (to the minimizer of the residual's second-order model along ``δ`` within
``[α/10, α/2]``; halved after a NaN or inadmissible trial) until the residual norm (or
the energy, ``"energy"``) decreases sufficiently: Armijo's rule with ``c = 10⁻⁴``
(Nocedal & Wright, *Numerical Optimization*, 2nd ed., §3.1). With no search (None) the
full step is taken, halved only where a trial state is NaN or inadmissible.
"""

from __future__ import annotations

import numpy as np

#: The line search that tries the full Newton step first (the default; ``newton.py``).
ADAPTIVE = "auto"
#: Line searches of :class:`~fesens.fem.nonlinear.newton.NewtonOptions`: full steps first,
#: searched only where they fail (``"auto"``, the default); on the residual norm; on the
#: stored energy (the residual norm decides where round-off hides the energy's decrease);
#: or none (full Newton steps, halved only where a trial state is NaN or inadmissible).
LINE_SEARCHES = (ADAPTIVE, "residual", "energy", None)

_ARMIJO = 1e-4
_GOLDSTEIN = 0.5


class StepFailed(Exception):  # noqa: N818 - a signal between Newton's functions
    """A Newton attempt failed: why (``reason``), the residual norms of its accepted
    iterates, and what went wrong (``kind``: ``"inadmissible"``, ``"nan"``,
    ``"stalled"``, ``"iterations"``, ``"no progress"`` or ``"solver"``)."""

    def __init__(self, reason: str, residuals: list[float], kind: str):
        super().__init__(reason)
        self.reason, self.residuals, self.kind = reason, residuals, kind


def search(system, x, t, delta, current, norm: float, line_search: str | None,
           max_backtracks: int, residuals: list[float]):
    """The accepted ``(x + α δ, its evaluation, its residual norm)``; raises
    :class:`StepFailed` when no ``α`` of ``max_backtracks + 1`` trials is accepted."""
    slope = float(np.dot(current.residual, delta))  # dΠ/dα at α = 0 for an energy Π
    alpha, why, kind = 1.0, "", ""
    for _ in range(max_backtracks + 1):
        trial = x + alpha * delta
        evaluation = system.evaluate(trial, t)
        trial_norm = np.inf if evaluation.reason else float(np.linalg.norm(evaluation.residual))
        if evaluation.reason is not None:
            why, kind = f"every trial state is inadmissible ({evaluation.reason})", "inadmissible"
        elif not np.isfinite(trial_norm):
            why, kind = "the residual is NaN or infinite at every trial state", "nan"
        elif _accepted(line_search, alpha, norm, trial_norm, current, evaluation, slope):
            return trial, evaluation, trial_norm
        elif line_search == ADAPTIVE:
            return _full_or_shorter(system, x, t, delta, current, norm, slope,
                                    (trial, evaluation, trial_norm))
        else:
            why = (f"the line search found no step length that reduces the residual below "
                   f"{norm:.3e} (stalled)")
            kind = "stalled"
            alpha, _ = _backtracked(alpha, current.residual, evaluation.residual)
            continue
        alpha /= 2  # an inadmissible or NaN trial tells nothing of a better length
    raise StepFailed(why, residuals, kind)


def _full_or_shorter(system, x, t, delta, current, norm: float, slope: float, full: tuple):
    """``"auto"`` after a full step that does not decrease the merit: the step of length
    ``α`` in ``[1/10, 1/2]`` that the residual's second-order model along ``δ``
    (:func:`_backtracked`) predicts to decrease the residual norm by at least half the
    linear model's decrease, ``‖R(α)‖ ≤ (1 − α/2) ‖R‖`` (the Goldstein bound with
    ``c = 1/2``; Nocedal & Wright, §3.1), where it is predicted and found to, else the full
    step ``full`` (``(x + δ, its evaluation, its residual norm)``): a step that merely
    satisfies Armijo's rule would creep along a short length for many iterations.

    A model that predicts no such ``α`` is a residual that rises steeply along the whole
    step (a slender body's first iterates stretch it by the square of its rotation), where
    backtracking gains little per iteration and full Newton steps, which return to
    quadratic convergence in a few iterations, are taken instead (the watchdog of
    :func:`~fesens.fem.nonlinear.newton.newton` guards them).
    """
    alpha, predicted = _backtracked(1.0, current.residual, full[1].residual)
    enough = (1.0 - _GOLDSTEIN * alpha) * norm
    if predicted > enough:
        return full
    trial = x + alpha * delta
    evaluation = system.evaluate(trial, t)
    if evaluation.reason is None:
        trial_norm = float(np.linalg.norm(evaluation.residual))
        if np.isfinite(trial_norm) and trial_norm <= enough:
            return trial, evaluation, trial_norm
    return full


def _backtracked(alpha: float, residual: np.ndarray, trial: np.ndarray
                 ) -> tuple[float, float]:
    """The next step length after the residual ``trial`` ``(n,)`` at a rejected ``α``,
    and the residual norm the model below predicts there.

    Along a Newton correction ``δ`` (``K_T δ = −R``) the residual is, to second order,
    ``R(α) = (1 − α) R + α² Q``, and ``Q`` follows from the rejected trial (exactly where
    the residual is quadratic in the unknowns, as a conductivity linear in the temperature
    makes it). The next ``α`` minimizes ``‖R(α)‖`` on ``[α/10, α/2]``, the bounds of the
    safeguarded backtracking of Dennis & Schnabel (*Numerical Methods for Unconstrained
    Optimization and Nonlinear Equations*, 1983, §6.3.2): a wild overshoot (a tangent that
    stiffens steeply along the step, such as that of a nearly void cell whose conductivity
    grows with its temperature) shortens ``α`` tenfold per trial, which halving alone
    could not within ``max_backtracks``.
    """
    q = (trial - (1.0 - alpha) * residual) / alpha ** 2
    uu, uq, qq = float(residual @ residual), float(residual @ q), float(q @ q)
    # d/da ‖(1 − a) R + a² Q‖² / 2 = 2 qq a³ − 3 uq a² + (uu + 2 uq) a − uu
    roots = np.roots([2.0 * qq, -3.0 * uq, uu + 2.0 * uq, -uu])
    low, high = 0.1 * alpha, 0.5 * alpha
    candidates = [low, high, *(r.real for r in roots
                               if abs(r.imag) <= 1e-12 * abs(r) and low < r.real < high)]
    norms = [float(np.linalg.norm((1.0 - a) * residual + a ** 2 * q)) for a in candidates]
    best = int(np.argmin(norms))
    return candidates[best], norms[best]


def _accepted(line_search, alpha, norm, trial_norm, current, evaluation, slope) -> bool:
    """Armijo's rule on the residual norm, or (``"energy"``, ``"auto"``) on the energy where
    the system has one; every step with no search (None)."""
    if line_search is None:
        return True
    decreased = trial_norm <= (1.0 - _ARMIJO * alpha) * norm
    if line_search in ("energy", ADAPTIVE) and current.energy is not None and slope < 0:
        return evaluation.energy <= current.energy + _ARMIJO * alpha * slope or decreased
    return decreased
