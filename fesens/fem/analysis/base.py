"""The one shape of an analysis: an object built from a model and its settings, whose
:meth:`Analysis.run` runs it on (possibly traced) inputs and returns a result record.

============  =================================================  ==============================
analysis      call                                               result
============  =================================================  ==============================
static        ``StaticAnalysis(model, solver=...).run(**θ)``     ``Solution`` (the physics')
nonlinear     ``StaticAnalysis(model, newton=...).run(**θ)``     ``NonlinearSolution``
modal         ``ModalAnalysis(model, k, lumped=...).run(**θ)``   ``Modes``
buckling      ``BucklingAnalysis(model, k, prestress).run(**θ)`` ``Buckling``
transient     ``TransientProblem(model, times=...).run(j, **θ)`` values per time level
dynamic       ``DynamicProblem(model, times=...).run(j, **θ)``   values per time level
harmonic      ``HarmonicAnalysis(model).run(ω, **θ)``            ``HarmonicResponse``
incremental   ``IncrementalAnalysis(model, t).run(j, **θ)``      values per increment
============  =================================================  ==============================

(:mod:`fesens.fem.analysis.static`, :mod:`~fesens.fem.analysis.modal`,
:mod:`~fesens.fem.analysis.incremental`,
:mod:`~fesens.fem.analysis.buckling`, :mod:`fesens.fem.transient.integrate`,
:mod:`~fesens.fem.transient.dynamics`, :mod:`~fesens.fem.transient.harmonic`; the elastic
buckling of a physics: :class:`fesens.physics.geometric_stiffness.ElasticBuckling`.)

**Why this shape.** Of the shapes the analyses had (a method of the model, ``model.modes``;
a function, ``buckling(model, ...)``; an object, ``TransientProblem(...).values``), only the
object holds what an analysis keeps between runs: a transient run's time levels, scheme,
checkpointing and step solvers; a design loop's settings, built once and run on every
design. A model method would put every analysis on the model (which then imports them: the
model is the lower layer, the analysis reads it), and a function re-takes every setting at
every call. So the settings (what is fixed: ``k``, the scheme, the solver, lumping) go to the
constructor, checked once, and the inputs that :func:`fesens.ad.grad` differentiates
(parameters, densities, loads, node coordinates, driving frequencies) go to :meth:`run`,
which is the traced program and returns a frozen record. The time analyses keep their
richer surface (``states`` streams the fields); their :meth:`run` is their ``values``.
A path-dependent model's load increments are an analysis of this shape: the factor tables
and checkpointing at construction, ``run`` on the traced inputs (``solve``: every state).

The static solve itself stays the model's (``model.solve``: the one solve path that every
analysis above assembles on and that ``grad`` traces); :class:`StaticAnalysis` gives it the
analyses' shape.
"""

from __future__ import annotations

from abc import ABC, abstractmethod


class Analysis(ABC):
    """An analysis of a model: settings at construction, inputs at :meth:`run`.

    Parameters
    ----------
    model : Model
        The model analysed (its mesh, conditions, loads and parameters).

    Attributes
    ----------
    model : Model
    """

    def __init__(self, model):
        self.model = model

    @abstractmethod
    def run(self, *args, **inputs):
        """Run the analysis on its inputs (traced when one is); returns its result record."""
