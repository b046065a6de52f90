"""Primitives of a program whose arrays are split over MPI ranks (the distributed model).

Each rank traces the same program on its own part of the design vector; two primitives
connect the ranks, and both are collective (every rank calls them, and their rules, in the
same order, which holds when every rank runs the same program):

* :func:`total` ``(value, collective)``: the sum over the ranks of a number or array,
  replicated on every rank (volume, objective);
* :func:`apply_operator` ``(operator, x)``: ``y_local = (A x)_local`` of a
  :class:`~fesens.solvers.petsc_operator.DistributedOperator` (a filter's matrix), whose
  rows need other ranks' entries of ``x``.

Derivatives are taken per rank: the gradient on rank ``r`` is the derivative with respect to
rank ``r``'s part of ``x``, and the gathered parts are the serial gradient. Both primitives
work in reverse mode (:func:`fesens.ad.grad`) and forward mode (:func:`fesens.ad.jvp`), and
their rules are written with these same primitives, so nested derivatives are traced too.
"""

from __future__ import annotations

from fesens.ad.linear_map import apply_linear, apply_linear_transpose
from fesens.ad.registry import defjvp_linear, defvjp
from fesens.ad.tracer import primitive


@primitive
def total(value, collective):
    """``Σ_ranks value_r``: a number or array summed elementwise over the ranks of
    ``collective`` (a :class:`fesens.mpi.Collective`), identical on every rank.

    Notes
    -----
    VJP: the cotangent unchanged. The result is replicated: every rank holds the same
    ``s = Σ_r v_r`` and runs its own reverse sweep, seeding its copy of ``s`` with the same
    cotangent ``s̄`` (1 for a gradient of ``s`` itself). ``∂s/∂v_r = I`` for every ``r``, so
    the cotangent of rank ``r``'s own ``v_r`` is ``s̄``, on its own rank, with no
    communication; summing the cotangent as well would count it ``size`` times. (Check:
    ``s̄ · Σ_r ṫ_r = Σ_r (s̄ · ṫ_r)``, the JVP's pairing in the split inner product.)

    JVP: the tangents summed over the ranks, ``ṡ = Σ_r ṫ_r`` (the function is linear).
    """
    return collective.sum(value)


defvjp(total, lambda ans, value, collective: lambda g: g, None, uses_ans=False)
defjvp_linear(total, 0)


#: ``(A x)`` on this rank's rows, ``(n_local,)``, for this rank's part of ``x`` (a
#: :class:`~fesens.solvers.petsc_operator.DistributedOperator`, whose ``apply_transpose``
#: sends the contributions to other ranks' entries back to them): a fixed linear map
#: (:mod:`fesens.ad.linear_map`), its VJP ``x̄_local = (Aᵀ ȳ)_local``.
apply_operator = apply_linear
#: ``(Aᵀ y)`` on this rank's columns: the VJP of :data:`apply_operator`.
apply_operator_transpose = apply_linear_transpose
