"""Time-dependent linear problems: ``M Ṫ + K T = f(t)`` (transient heat conduction) and
structural dynamics ``M ü + C u̇ + K u = f(t)`` with its frequency response.

* :mod:`~fesens.fem.transient.schemes`: the time-stepping schemes, one record each in
  :data:`TIME_SCHEMES` (the θ-method, BDF2 and BDF3 as one linear multistep form, Newmark
  and generalized-α);
* :mod:`~fesens.fem.transient.time_levels`: time levels (:func:`time_grid`, the one rule
  of a step that divides the interval) and time functions of loads and prescribed values;
* :mod:`~fesens.fem.transient.integrate`: :class:`TransientProblem`, whose ``values`` is one
  differentiable primitive over the whole integration (its VJP the discrete adjoint,
  backwards with the forward factorizations) and whose ``states`` streams the fields;
* :mod:`~fesens.fem.transient.checkpointing`: Griewank's binomial schedule, so the gradient
  keeps at most ``max_states`` states and recomputes the others;
* :mod:`~fesens.fem.transient.dynamics`: :class:`DynamicProblem`, ``M ü + C u̇ + K u = f(t)``
  by Newmark or generalized-α with Rayleigh damping, its ``values`` one primitive likewise;
* :mod:`~fesens.fem.transient.harmonic`: :class:`HarmonicAnalysis`, the frequency response
  ``(K − ω² M + i ω C) u = f`` and its adjoint (``harmonic_response``, deprecated).
"""

import warnings

from fesens.fem.transient.checkpointing import minimal_advances
from fesens.fem.transient.dynamics import DynamicProblem
from fesens.fem.transient.harmonic import HarmonicAnalysis, HarmonicResponse, harmonic_response
from fesens.fem.transient.integrate import TransientProblem
from fesens.fem.transient.schemes import TIME_SCHEMES, TimeScheme, time_scheme
from fesens.fem.transient.time_levels import time_grid

__all__ = ["TIME_SCHEMES", "DynamicProblem", "HarmonicAnalysis",
           "HarmonicResponse", "TimeScheme",
           "TransientProblem", "harmonic_response", "minimal_advances", "time_grid",
           "time_scheme"]


def __getattr__(name: str):
    if name == "SCHEMES":
        warnings.warn("fesens.fem.transient.SCHEMES is deprecated; use TIME_SCHEMES (the "
                      "records of every scheme) or schemes.schemes_of_order(1)",
                      DeprecationWarning, stacklevel=2)
        return {s.name: s for s in TIME_SCHEMES.values() if s.order == 1}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
