"""Every picture fesens draws: PNG files of fields, designs, convergence and studies.

Figures are :class:`matplotlib.figure.Figure` objects on the Agg canvas, never pyplot
(see :mod:`fesens.plotting.figure`): importing fesens leaves your matplotlib backend alone.

Modules: :mod:`~fesens.plotting.figure` (:func:`new_figure`, :func:`save_figure`),
:mod:`~fesens.plotting.fields` (a per-cell or nodal field on a 2D mesh),
:mod:`~fesens.plotting.design` (a density field in 2D or 3D, an optimization's history),
:mod:`~fesens.plotting.markers` (a model's supports and loads on a picture),
:mod:`~fesens.plotting.scales` (color scales that a few extreme cells do not wash out),
:mod:`~fesens.plotting.study` (tornado, sweep and scatter charts of a parameter study),
:mod:`~fesens.plotting.truss` (a truss, bar widths proportional to the areas),
:mod:`~fesens.plotting.curves` (the load–displacement curve of a nonlinear solve).
"""

from fesens.plotting.curves import plot_load_path
from fesens.plotting.design import (
    plot_convergence,
    plot_density,
    plot_density_panels,
    solid_surface,
)
from fesens.plotting.fields import plot_cell_field, plot_nodal_field
from fesens.plotting.figure import new_figure, save_figure
from fesens.plotting.markers import boundary_markers
from fesens.plotting.scales import symmetric_log_scale
from fesens.plotting.study import plot_scatter, plot_sweeps, plot_tornado
from fesens.plotting.truss import plot_truss

__all__ = [
    "boundary_markers",
    "new_figure",
    "plot_cell_field",
    "plot_convergence",
    "plot_density",
    "plot_density_panels",
    "plot_load_path",
    "plot_nodal_field",
    "plot_scatter",
    "plot_sweeps",
    "plot_tornado",
    "plot_truss",
    "save_figure",
    "solid_surface",
    "symmetric_log_scale",
]
