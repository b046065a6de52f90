"""Color scales of per-cell fields that a few extreme cells do not wash out.

A sensitivity field often spans several decades, and its largest values sit in two or three
cells (at a point load, a support, a re-entrant corner): on a linear scale every other cell
gets the same color. :func:`symmetric_log_scale` maps ``|value|`` logarithmically above a
threshold set by the bulk of the cells (linearly below it, through 0), and clips at a
percentile; :func:`linear_scale` clips a linear scale at a percentile. Each returns the
norm and a description for the color bar's label, so a reader knows what the colors mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.colors import Normalize, SymLogNorm

#: Diverging color map of fields with both signs (0 is white).
DIVERGING_CMAP = "RdBu_r"


@dataclass(frozen=True)
class ColorScale:
    """A norm for ``PolyCollection(..., norm=scale.norm)`` and what it is.

    Attributes
    ----------
    norm : matplotlib.colors.Normalize
    description : str
        The scale in words, for the color bar's label ("" for a plain linear scale).
    extend : str
        ``extend`` of the color bar: which ends are clipped ("neither", "min", "max",
        "both").
    signed : bool
        Whether the field has both signs (the norm is centred on 0; draw it with a
        diverging color map such as :data:`DIVERGING_CMAP`).
    ticks : tuple of float or None
        Color bar ticks (None: matplotlib's choice).
    """

    norm: Normalize
    description: str
    extend: str
    signed: bool
    ticks: tuple[float, ...] | None = None

    def label(self, name: str) -> str:
        """``name`` followed by the scale's description in brackets."""
        if not self.description:
            return name
        return f"{name} ({self.description})" if name else self.description


def _extend(values: np.ndarray, vmin: float, vmax: float) -> str:
    low, high = bool(values.min() < vmin), bool(values.max() > vmax)
    return {(False, False): "neither", (True, False): "min", (False, True): "max",
            (True, True): "both"}[(low, high)]


def _ordinal(percentile: float) -> str:
    number = f"{percentile:g}"
    if number.endswith(("11", "12", "13")) or "." in number:
        return f"{number}th"
    return number + {"1": "st", "2": "nd", "3": "rd"}.get(number[-1], "th")


def linear_scale(values: np.ndarray, *, clip_percentile: float = 100.0) -> ColorScale:
    """A linear scale from the smallest value to the ``clip_percentile`` percentile.

    Parameters
    ----------
    values : numpy.ndarray
        ``(n_cells,)`` field values.
    clip_percentile : float
        Upper limit as a percentile of ``values``; below 100 keeps a singularity from
        washing out the rest (the description says where the scale is clipped).
    """
    values = np.asarray(values, dtype=float)
    vmin = float(values.min())
    vmax = max(float(np.percentile(values, clip_percentile)), vmin)
    clipped = clip_percentile < 100.0 and vmax < values.max()
    return ColorScale(Normalize(vmin, vmax),
                       f"clipped at the {_ordinal(clip_percentile)} percentile" if clipped
                       else "", _extend(values, vmin, vmax), False)


def symmetric_log_scale(values: np.ndarray, *, clip_percentile: float = 99.0,
                        threshold_percentile: float = 5.0,
                        max_decades: float = 4.0) -> ColorScale:
    """A symmetric-log scale (:class:`~matplotlib.colors.SymLogNorm`) set by the bulk.

    The scale is logarithmic in ``|value|`` from a threshold to the top and linear within
    ``±threshold`` (so it passes through 0 and takes both signs). The top is the
    ``clip_percentile`` percentile of ``|values|`` (cells beyond it take the end colors);
    the threshold is the ``threshold_percentile`` percentile of the nonzero ``|values|``,
    raised if needed so that at most ``max_decades`` decades are shown. A field with both
    signs gets limits ``±top`` (centred on 0); a field of one sign goes from 0 to its top.

    Parameters
    ----------
    values : numpy.ndarray
        ``(n_cells,)`` field values.
    clip_percentile : float
        Percentile of ``|values|`` where the scale ends (100: the largest value).
    threshold_percentile : float
        Percentile of the nonzero ``|values|`` where the linear part ends.
    max_decades : float
        Largest number of decades between the threshold and the top.

    Returns
    -------
    ColorScale
        A linear scale if the field is zero or spans less than a decade.
    """
    values = np.asarray(values, dtype=float)
    magnitude = np.abs(values)
    nonzero = magnitude[magnitude > 0]
    if nonzero.size == 0:
        return linear_scale(values)
    top = float(np.percentile(magnitude, clip_percentile))
    if top <= 0.0:
        top = float(nonzero.max())
    threshold = max(float(np.percentile(nonzero, threshold_percentile)),
                    top * 10.0 ** -max_decades)
    signed = bool(values.min() < 0.0 < values.max())
    vmin = -top if values.min() < 0.0 else 0.0
    vmax = top if values.max() > 0.0 else 0.0
    if threshold >= 0.1 * top:  # less than a decade: a log scale shows nothing more
        return ColorScale(Normalize(vmin, vmax), "", _extend(values, vmin, vmax), signed)
    clipped = clip_percentile < 100.0 and magnitude.max() > top
    description = f"symmetric log, linear within ±{threshold:.2g}" + (
        f", clipped at the {_ordinal(clip_percentile)} percentile of |value|" if clipped
        else "")
    return ColorScale(SymLogNorm(threshold, linscale=0.5, vmin=vmin, vmax=vmax),
                       description, _extend(values, vmin, vmax), signed,
                       _decade_ticks(threshold, vmin, vmax))


def _decade_ticks(threshold: float, vmin: float, vmax: float) -> tuple[float, ...]:
    """0 and powers of ten between ``threshold`` and the top (at most 3 a side if both
    signs are shown, else 5), so that the labels do not overlap."""
    top, most = max(-vmin, vmax), 3 if vmin < 0.0 < vmax else 5
    exponents = np.arange(np.ceil(np.log10(threshold)), np.floor(np.log10(top)) + 1)[::-1]
    exponents = exponents[:: max(1, int(np.ceil(exponents.size / most)))]
    decades = [float(10.0**k) for k in sorted(exponents)]
    return tuple([-d for d in reversed(decades) if vmin < 0.0] + [0.0]
                 + [d for d in decades if vmax > 0.0])
