"""The time-stepping schemes: one record each (:class:`TimeScheme`), in one registry
(:data:`TIME_SCHEMES`).

A record says everything the rest of fesens needs of a scheme: its name, the order of the
equation it integrates (first: ``M Ṫ + K T = f(t)``; second: ``M ü + C u̇ + K u = f(t)``),
the earlier levels a step reads, its accuracy, its options with their defaults and
admissible ranges (those a config file may set among them), and how its coefficients
follow from the time levels and the options. :class:`~fesens.fem.transient.TransientProblem`
and :class:`~fesens.fem.transient.DynamicProblem`, the memory estimate of a run's kept
states (:mod:`~fesens.fem.transient.run_memory`), the config's ``[time]`` keys, their
checks and the docs' list read it through :func:`time_scheme` and :func:`schemes_of_order`;
a scheme's name is written here only. Adding a scheme is its record here (and its test).

First-order schemes are one linear multistep form with ``L`` earlier levels:

    Σ_(k=0..L) α_(n,k) M T_(n−k) / Δt_n + Σ_(k=0..1) β_(n,k) (K T_(n−k) − f_(n−k)) = 0

* θ-method (``L = 1``): ``α = (1, −1)``, ``β = (θ, 1 − θ)`` (backward Euler θ = 1,
  Crank–Nicolson θ = ½);
* BDF-k (``L = k``, ``β = (1, 0)``): ``α_(n,k)/Δt_n = ℓ_k'(t_n)``, the derivatives at
  ``t_n`` of the Lagrange polynomials on ``t_n, ..., t_(n−k)``, which gives variable steps
  (E. Hairer, S. P. Nørsett, G. Wanner, *Solving Ordinary Differential Equations I*,
  §III.5). BDF2 (``ω = Δt_n / Δt_(n−1)``): ``α = ((1 + 2ω)/(1 + ω), −(1 + ω),
  ω²/(1 + ω))``, ``(3/2, −2, 1/2)`` for ``ω = 1``; BDF3 for constant steps
  ``(11/6, −3, 3/2, −1/3)``. BDF-k starts with BDF1 (backward Euler), BDF2, ... steps,
  the earlier states it needs not existing yet.

The matrix of step ``n`` is ``α_(n,0)/Δt_n M + β_(n,0) K``: a constant step gives one matrix
for the θ-method, ``k`` for BDF-k (its starting steps and the rest). Second-order schemes
give :class:`NewmarkCoefficients` (:mod:`~fesens.fem.transient.dynamics` writes their
update).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

#: The equation a scheme of each order integrates, and the word its refusals use.
EQUATIONS = MappingProxyType({1: "M Ṫ + K T = f(t)", 2: "M ü + C u̇ + K u = f(t)"})
KINDS = MappingProxyType({1: "time", 2: "dynamic"})


@dataclass(frozen=True)
class StepCoefficients:
    """``α_(n,k)`` ``(N + 1, L + 1)`` and ``β_(n,k)`` ``(N + 1, 2)`` of every step (row 0
    unused) and the steps ``Δt_n`` ``(N + 1,)`` (``Δt_0`` unused); ``L`` the earlier
    levels a step reads."""

    alpha: np.ndarray
    beta: np.ndarray
    dt: np.ndarray

    def matrix_key(self, n: int) -> tuple[float, float]:
        """``(α_(n,0)/Δt_n, β_(n,0))``: the weights of ``M`` and ``K`` in step ``n``'s
        matrix (equal keys share one factorization)."""
        return (float(self.alpha[n, 0] / self.dt[n]), float(self.beta[n, 0]))


@dataclass(frozen=True)
class NewmarkCoefficients:
    """``γ``, ``β``, ``α_m``, ``α_f`` of a generalized-α step and the constant step ``Δt``."""

    gamma: float
    beta: float
    alpha_m: float
    alpha_f: float
    dt: float

    def step_key(self, mass_damping: float, stiffness_damping: float) -> tuple[float, float]:
        """``(s_M, s_K)`` with ``S = s_M M + s_K K`` the matrix of every step."""
        g, b, am, af, dt = self.gamma, self.beta, self.alpha_m, self.alpha_f, self.dt
        return (float(1 - am + (1 - af) * g * dt * mass_damping),
                float((1 - af) * (b * dt ** 2 + g * dt * stiffness_damping)))


Coefficients = StepCoefficients | NewmarkCoefficients


@dataclass(frozen=True)
class SchemeOption:
    """One option of a scheme: a number in ``[low, high]``.

    Attributes
    ----------
    default : float or None
        Its value when not given; None: it must be given.
    low, high : float
    admissible : str
        The range as the refusal writes it (``in [1/2, 1]``, ``>= 1/2``).
    reason : str
        Why the range, for the refusal.
    doc : str
        What it is (the config key's help text).
    config : bool
        A ``[time]`` key of the config files.
    """

    default: float | None
    low: float
    high: float
    admissible: str
    reason: str
    doc: str
    config: bool = False


@dataclass(frozen=True)
class TimeScheme:
    """One time-stepping scheme.

    Attributes
    ----------
    name : str
    order : {1, 2}
        The order of the equation it integrates (:data:`EQUATIONS`).
    levels : int
        The earlier levels a step reads: ``L`` of a first-order scheme's form; the state
        vectors each snapshot of a checkpointed run keeps.
    accuracy : int
        Its order of accuracy in ``Δt``.
    build : callable
        ``build(times, **options) -> coefficients`` (:class:`StepCoefficients` or
        :class:`NewmarkCoefficients`) of checked options, every one given.
    description : str
        One line, for the docs and the config's help.
    options : mapping of str to SchemeOption
    constant_step : bool
        It needs equal steps (one factorization of its step matrix).
    """

    name: str
    order: int
    levels: int
    accuracy: int
    build: Callable[..., Coefficients]
    description: str
    options: Mapping[str, SchemeOption] = field(default_factory=dict)
    constant_step: bool = False

    def __post_init__(self):
        if self.order not in EQUATIONS or self.levels < 1 or self.accuracy < 1:
            raise ValueError(f"time scheme {self.name!r}: order {self.order}, levels "
                             f"{self.levels}, accuracy {self.accuracy}; expected order 1 "
                             "or 2 and levels, accuracy >= 1")
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    @property
    def in_config(self) -> bool:
        """Offered by name in a config's ``[time] scheme``: each option it needs is a key."""
        return all(option.default is not None or option.config
                   for option in self.options.values())

    def coefficients(self, times: np.ndarray, **given: float | None) -> Coefficients:
        """The coefficients of every step on the time levels ``times`` ``(N + 1,)`` with
        the options ``given`` (None: not given, its default).

        Raises
        ------
        ValueError
            An option of another scheme, an option outside its range (or a required one
            not given), or unequal steps for a scheme of :attr:`constant_step`.
        """
        for key, value in given.items():
            if value is not None and key not in self.options:
                takes = (f"takes {', '.join(self.options)} only" if self.options
                         else "takes no option")
                owners = [s.name for s in TIME_SCHEMES.values() if key in s.options]
                raise ValueError(f"scheme={self.name!r} {takes}: {key} belongs to scheme="
                                 f"{' or '.join(repr(s) for s in owners) or 'none'}")
        if self.constant_step:
            steps = np.diff(times)
            if np.max(np.abs(steps - steps[0])) > 1e-9 * steps[0]:
                raise ValueError(f"scheme={self.name!r} needs a constant time step (one "
                                 "factorization of the step matrix); give t_end and dt, or "
                                 "equally spaced times")
        options = {}
        for key, option in self.options.items():
            raw = given.get(key)
            value = option.default if raw is None else float(raw)
            if value is None or not (np.isfinite(value) and option.low <= value <= option.high):
                raise ValueError(f"scheme={self.name!r} needs {key} {option.admissible} "
                                 f"({option.reason}), got {key}={raw!r}")
            options[key] = value
        return self.build(times, **options)


# ------------------------------------------------------------ first order: M Ṫ + K T = f
def _step_lengths(times: np.ndarray, rtol: float = 1e-9) -> np.ndarray:
    """``Δt_n`` ``(N + 1,)`` (``Δt_0`` NaN), the steps equal to ``rtol`` (round-off of
    ``t_0 + n Δt`` or of a sum of steps) replaced by one value, so that equal steps share
    one step matrix."""
    steps = np.diff(times)
    order = np.argsort(steps, kind="stable")
    snapped = steps.copy()
    first = steps[order[0]]
    for i in order[1:]:
        if steps[i] - first > rtol * first:
            first = steps[i]
        snapped[i] = first
    return np.concatenate([[np.nan], snapped])


def _theta_method(times: np.ndarray, theta: float) -> StepCoefficients:
    alpha, beta = np.zeros((times.size, 2)), np.zeros((times.size, 2))
    alpha[1:] = (1.0, -1.0)
    beta[1:] = (theta, 1.0 - theta)
    return StepCoefficients(alpha, beta, _step_lengths(times))


def _bdf2_rows(dt: np.ndarray, start: int) -> np.ndarray:
    """BDF2's ``α`` ``(N + 1 − start, 3)`` of the steps ``start..N`` (``ω = Δt_n /
    Δt_(n−1)``)."""
    omega = dt[start:] / dt[start - 1:-1]
    return np.stack([(1 + 2 * omega) / (1 + omega), -(1 + omega), omega ** 2 / (1 + omega)],
                    axis=1)


def _bdf_rows(dt: np.ndarray, start: int, k: int) -> np.ndarray:
    """BDF-k's ``α`` ``(N + 1 − start, k + 1)`` of the steps ``start..N``: with ``τ_m =
    (t_n − t_(n−m)) / Δt_n``, ``α_0 = Σ_(m≥1) 1/τ_m`` and ``α_j = Π_(m∉{0,j}) τ_m /
    Π_(m≠j) (τ_m − τ_j)``, ``Δt_n`` times the Lagrange polynomials' derivatives at
    ``t_n``."""
    n = np.arange(start, dt.size)
    back = np.stack([dt[n - i] for i in range(k)], axis=1)  # Δt_n, Δt_(n−1), ...
    tau = np.concatenate([np.zeros((n.size, 1)), np.cumsum(back, axis=1)], axis=1)
    tau /= back[:, :1]
    alpha = np.empty((n.size, k + 1))
    alpha[:, 0] = np.sum(1.0 / tau[:, 1:], axis=1)
    for j in range(1, k + 1):
        others = [m for m in range(k + 1) if m != j]
        alpha[:, j] = (np.prod(tau[:, others[1:]], axis=1)
                       / np.prod(tau[:, others] - tau[:, [j]], axis=1))
    return alpha


def _bdf(times: np.ndarray, k: int) -> StepCoefficients:
    """BDF-k: step ``j < k`` is BDF-j (backward Euler first), the others BDF-k."""
    dt = _step_lengths(times)
    alpha, beta = np.zeros((times.size, k + 1)), np.zeros((times.size, 2))
    beta[1:, 0] = 1.0
    alpha[1, :2] = (1.0, -1.0)
    for order in range(2, min(k, times.size - 1) + 1):
        end = times.size if order == k else order + 1
        rows = _bdf2_rows(dt[:end], order) if order == 2 else _bdf_rows(dt[:end], order, order)
        alpha[order:end, :order + 1] = rows
    return StepCoefficients(alpha, beta, dt)


# ------------------------------------------------------------ second order: M ü + C u̇ + K u
def _newmark(times: np.ndarray, gamma: float, beta: float) -> NewmarkCoefficients:
    return NewmarkCoefficients(gamma, beta, 0.0, 0.0, float(np.diff(times)[0]))


def _generalized_alpha(times: np.ndarray, rho_inf: float) -> NewmarkCoefficients:
    """Chung & Hulbert's ``α_m = (2ρ∞ − 1)/(ρ∞ + 1)``, ``α_f = ρ∞/(ρ∞ + 1)``, ``γ = ½ − α_m
    + α_f``, ``β = ¼ (1 − α_m + α_f)²``."""
    alpha_m, alpha_f = (2 * rho_inf - 1) / (rho_inf + 1), rho_inf / (rho_inf + 1)
    gamma = 0.5 - alpha_m + alpha_f
    return NewmarkCoefficients(gamma, 0.25 * (1 - alpha_m + alpha_f) ** 2, alpha_m, alpha_f,
                               float(np.diff(times)[0]))


THETA = SchemeOption(None, 0.5, 1.0, "in [0.5, 1]", "unconditionally stable",
                     "θ of the θ-method")
GAMMA = SchemeOption(0.5, 0.5, math.inf, ">= 1/2", "smaller gamma damps negatively and is "
                     "unstable", "Newmark's γ (default ½)")
BETA = SchemeOption(0.25, 0.0, math.inf, ">= 0", "beta >= gamma/2 is unconditionally "
                    "stable", "Newmark's β (default ¼)")
RHO_INF = SchemeOption(1.0, 0.0, 1.0, "in [0, 1]", "the spectral radius at infinite "
                       "frequency", "spectral radius at infinite frequency (default 1)",
                       config=True)

#: The registry: every scheme by name (this order in the docs and the config's choices).
TIME_SCHEMES: Mapping[str, TimeScheme] = MappingProxyType({s.name: s for s in (
    TimeScheme("backward_euler", 1, 1, 1, lambda times: _theta_method(times, 1.0),
               "backward Euler, the θ-method with θ = 1: first order, L-stable"),
    TimeScheme("crank_nicolson", 1, 1, 2, lambda times: _theta_method(times, 0.5),
               "Crank–Nicolson, the θ-method with θ = ½: second order, A-stable (its "
               "stiff modes oscillate)"),
    TimeScheme("theta", 1, 1, 1, _theta_method,
               "the θ-method, θ in [½, 1] (second order at θ = ½ only)",
               options={"theta": THETA}),
    TimeScheme("bdf2", 1, 2, 2, lambda times: _bdf(times, 2),
               "BDF2 with variable steps, started by backward Euler: second order, "
               "L-stable"),
    TimeScheme("bdf3", 1, 3, 3, lambda times: _bdf(times, 3),
               "BDF3 with variable steps, started by backward Euler and BDF2: third order "
               "(A(86°)-stable; keep step ratios within 1.4)"),
    TimeScheme("newmark", 2, 1, 2, _newmark,
               "Newmark's method, by default average acceleration (γ = ½, β = ¼): second "
               "order, no numerical damping", options={"gamma": GAMMA, "beta": BETA},
               constant_step=True),
    TimeScheme("generalized_alpha", 2, 1, 2, _generalized_alpha,
               "Chung & Hulbert's generalized-α, numerical damping of the high frequencies "
               "by ρ∞: second order", options={"rho_inf": RHO_INF}, constant_step=True),
)})

#: The scheme of each order when none is named.
DEFAULT_SCHEMES: Mapping[int, str] = MappingProxyType({1: "bdf2", 2: "newmark"})


def time_scheme(name: str, order: int | None = None) -> TimeScheme:
    """The record of ``name`` (of the equation of ``order``, if given).

    Raises
    ------
    ValueError
        An unknown name, or one of another order, naming the choices.
    """
    scheme = TIME_SCHEMES.get(name)
    if scheme is not None and (order is None or scheme.order == order):
        return scheme
    kind = "time" if order is None else KINDS[order]
    choices = sorted(s.name for s in TIME_SCHEMES.values() if order in (None, s.order))
    other = "" if scheme is None else f" (it integrates {EQUATIONS[scheme.order]})"
    raise ValueError(f"unknown {kind} scheme {name!r}{other}; choose one of {choices}")


def schemes_of_order(order: int, *, config: bool = False) -> tuple[TimeScheme, ...]:
    """The schemes of the equation of ``order`` (``config``: those a config file names)."""
    return tuple(s for s in TIME_SCHEMES.values()
                 if s.order == order and (s.in_config or not config))


def __getattr__(name: str):
    """The names this module had before the records, for one release."""
    if name == "step_coefficients":
        warnings.warn("schemes.step_coefficients(times, scheme, theta) is deprecated; use "
                      "time_scheme(scheme, 1).coefficients(times, theta=theta)",
                      DeprecationWarning, stacklevel=2)
        return lambda times, scheme, theta=None: time_scheme(scheme, 1).coefficients(
            times, theta=theta)
    if name == "SCHEMES":
        warnings.warn("schemes.SCHEMES is deprecated; use TIME_SCHEMES or "
                      "schemes_of_order(1)", DeprecationWarning, stacklevel=2)
        return {s.name: s for s in schemes_of_order(1)}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
