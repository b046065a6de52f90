"""fesens: finite-element sensitivity analysis."""

from fesens.openmp import cap_openmp_threads

# Before any submodule can load scikit-sparse (and with it libgomp): see fesens.openmp.
cap_openmp_threads()

__version__ = "0.1.0"
