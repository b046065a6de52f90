"""Time-dependent linear problems: ``M Ṫ + K T = f(t)`` (transient heat conduction) and
structural dynamics ``M ü + C u̇ + K u = f(t)`` with its frequency response.

* :mod:`~fesens.fem.transient.schemes`: time levels, the θ-method and BDF2 as one linear
  multistep form, time functions of loads and prescribed values;
* :mod:`~fesens.fem.transient.integrate`: :class:`TransientProblem`, whose ``values`` is one
  differentiable primitive over the whole integration (its VJP the discrete adjoint,
  backwards with the forward factorizations) and whose ``states`` streams the fields;
* :mod:`~fesens.fem.transient.checkpointing`: Griewank's binomial schedule, so the gradient
  keeps at most ``max_states`` states and recomputes the others;
* :mod:`~fesens.fem.transient.dynamics`: :class:`DynamicProblem`, ``M ü + C u̇ + K u = f(t)``
  by Newmark or generalized-α with Rayleigh damping, its ``values`` one primitive likewise;
* :mod:`~fesens.fem.transient.harmonic`: :func:`harmonic_response`, the frequency response
  ``(K − ω² M + i ω C) u = f`` and its adjoint.
"""

from fesens.fem.transient.checkpointing import minimal_advances
from fesens.fem.transient.dynamics import DynamicProblem
from fesens.fem.transient.harmonic import HarmonicResponse, harmonic_response
from fesens.fem.transient.integrate import TransientProblem
from fesens.fem.transient.schemes import SCHEMES, time_grid

__all__ = ["SCHEMES", "DynamicProblem", "HarmonicResponse", "TransientProblem",
           "harmonic_response", "minimal_advances", "time_grid"]
