"""Time-dependent linear problems ``M Ṫ + K T = f(t)`` (transient heat conduction).

* :mod:`~fesens.fem.transient.schemes`: time levels, the θ-method and BDF2 as one linear
  multistep form, time functions of loads and prescribed values;
* :mod:`~fesens.fem.transient.integrate`: :class:`TransientProblem`, whose ``values`` is one
  differentiable primitive over the whole integration (its VJP the discrete adjoint,
  backwards with the forward factorizations) and whose ``states`` streams the fields;
* :mod:`~fesens.fem.transient.checkpointing`: Griewank's binomial schedule, so the gradient
  keeps at most ``max_states`` states and recomputes the others.
"""

from fesens.fem.transient.checkpointing import minimal_advances
from fesens.fem.transient.integrate import TransientProblem
from fesens.fem.transient.schemes import SCHEMES, time_grid

__all__ = ["SCHEMES", "TransientProblem", "minimal_advances", "time_grid"]
