"""A constraint on an aggregate, normalized every iteration so that it tracks the maximum it
approximates: the adaptive normalization of Le, Norato, Bruns, Ha & Tortorelli,
"Stress-based topology optimization for continua", Struct. Multidisc. Optim. 41 (2010)
605–620 (their §3.2, after Yang & Chen 1996).

A p-norm ``σ_PN = (Σ_e σ_e^p)^(1/p)`` lies above the largest stress ``σ_max`` (by up to a
factor ``n^(1/p)``), so ``σ_PN ≤ σ*`` is too strict, by an amount that changes as the design
does. The constraint is ``c^k σ_PN(x) ≤ σ*`` instead, with the factor of iteration ``k``

    c^k = α σ_max^(k−1) / σ_PN^(k−1) + (1 − α) c^(k−1),     0 < α ≤ 1,

the ratio of the previous iteration's evaluation, damped by ``α`` (Le et al. take
``α = 0.5``; ``α = 1``: the last ratio itself). At the first evaluation ``c`` is that
design's ratio, so the constraint starts equal to the true maximum. ``c^k`` is held constant
within iteration ``k``: the gradient the optimizer receives is ``c^k ∇σ_PN / σ*``, not that of
the ratio (a max is not differentiable), and the constraint function changes between
iterations; the damping keeps that change small enough for MMA's approximations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fesens.ad.numpy_wrapper import getval
from fesens.opt.responses import Constraint, Response


@dataclass
class NormalizedConstraint(Constraint):
    """``c^k · aggregate(state, ρ) ≤ limit`` with the adaptive factor ``c^k`` of the module
    docstring.

    Parameters
    ----------
    name : str
    response : callable
        The aggregate ``f(state, ρ)`` (traced), e.g. a stress p-norm.
    limit : float
        The bound of the maximum it approximates.
    maximum : callable
        ``f(state, ρ)`` the exact maximum the aggregate approximates (evaluated untraced).
    alpha : float
        Damping ``α`` in ``(0, 1]``.

    Attributes
    ----------
    factor : float or None
        ``c^k`` of the current iteration (None before the first evaluation).
    """

    maximum: Response = None
    alpha: float = 0.5
    factor: float | None = field(default=None, init=False)
    _ratio: float | None = field(default=None, init=False, repr=False)
    _iteration: int = field(default=0, init=False, repr=False)
    _aggregate: Response = field(default=None, init=False, repr=False)

    def __post_init__(self):
        if self.maximum is None:
            raise TypeError("a normalized constraint needs maximum=f(state, rho)")
        if not 0.0 < self.alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {self.alpha!r}")
        # DesignProblem.evaluate calls `response`: it becomes the normalized aggregate
        self._aggregate, self.response = self.response, self._normalized

    def _normalized(self, state, rho):
        aggregate = self._aggregate(state, rho)
        value = float(getval(aggregate))
        if not value > 0.0:
            raise ValueError(f"constraint {self.name!r}: the aggregate is {value!r}; the "
                             "adaptive normalization divides by it, so it must be > 0 (is "
                             "the structure loaded?)")
        self._ratio = float(getval(self.maximum(state, rho))) / value
        if self.factor is None:  # the first evaluation: the constraint is the true maximum
            self.factor = self._ratio
        return self.factor * aggregate

    def update(self, iteration: int) -> None:
        """Start ``iteration``: ``c`` from the last evaluation's ratio (once per iteration)."""
        if iteration > self._iteration and self._ratio is not None:
            self.factor = self.alpha * self._ratio + (1.0 - self.alpha) * self.factor
        self._iteration = max(self._iteration, iteration)

    def restore(self, history: list[dict]) -> None:
        """The factor and ratio of the last iteration of ``history`` (a resumed run), read
        from the columns of :meth:`reports`, so the next :meth:`update` is the one the
        uninterrupted run made."""
        if not history:
            return
        last = history[-1]
        self.factor = float(last[f"{self.name}_normalization"])
        self._ratio = float(last[f"{self.name}_ratio"])
        self._iteration = int(last["iteration"])

    def reports(self) -> dict[str, Response]:
        """History columns ``<name>_max`` (the exact maximum), ``<name>_ratio`` (the
        maximum over the aggregate, which the next iteration's ``c`` takes in) and
        ``<name>_normalization`` (``c`` of the iteration); the constraint's own column is
        ``c · aggregate``."""
        return {f"{self.name}_max": self.maximum,
                f"{self.name}_ratio": lambda state, rho: self._ratio,
                f"{self.name}_normalization": lambda state, rho: self.factor}
