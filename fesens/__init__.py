"""fesens: finite-element sensitivity analysis."""

__version__ = "0.1.0"
