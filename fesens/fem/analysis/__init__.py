"""Analyses of a model, traced like its solve, each in the one shape of
:mod:`fesens.fem.analysis.base`: built from the model and its settings, run on (traced)
inputs, a result record back. Here: the static solve (:class:`StaticAnalysis`), free
vibration (:class:`ModalAnalysis`) and linear buckling (:class:`BucklingAnalysis`); the
time-dependent ones and the frequency response live with their steppers in
:mod:`fesens.fem.transient` (``TransientProblem``, ``DynamicProblem``, ``HarmonicAnalysis``).
"""

from fesens.fem.analysis.base import Analysis
from fesens.fem.analysis.buckling import Buckling, BucklingAnalysis
from fesens.fem.analysis.modal import ModalAnalysis, Modes
from fesens.fem.analysis.static import StaticAnalysis

__all__ = ["Analysis", "Buckling", "BucklingAnalysis", "ModalAnalysis", "Modes",
           "StaticAnalysis"]
