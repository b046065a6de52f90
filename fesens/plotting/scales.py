"""Color scales of per-cell fields that a few extreme cells do not wash out.

A sensitivity field often spans several decades, and its largest values sit in two or three
cells (at a point load, a support, a re-entrant corner): on a linear scale every other cell
gets the same color. :func:`symmetric_log_scale` maps ``|value|`` logarithmically above a
threshold set by the bulk of the cells (linearly below it, through 0), and clips at a
percentile; :func:`linear_scale` is linear up to a percentile and compressed above it, up
to the largest value (so the color bar still ends at the peak a title names). Each returns
the norm and a description of the scale for the picture's caption, so a reader knows what
the colors mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.colors import FuncNorm, Normalize, SymLogNorm
from matplotlib.ticker import MaxNLocator

#: Diverging color map of fields with both signs (0 is white).
DIVERGING_CMAP = "RdBu_r"

#: Share of the color map that :func:`linear_scale` gives to the values above its
#: percentile (the rest goes to the bulk below it).
COMPRESSED_TOP = 0.15


@dataclass(frozen=True)
class ColorScale:
    """A norm for ``PolyCollection(..., norm=scale.norm)`` and what it is.

    Attributes
    ----------
    norm : matplotlib.colors.Normalize
    description : str
        The scale in words, for the picture's caption ("" for a plain linear scale).
    extend : str
        ``extend`` of the color bar: which ends are clipped ("neither", "min", "max",
        "both").
    signed : bool
        Whether the field has both signs (the norm is centred on 0; draw it with a
        diverging color map such as :data:`DIVERGING_CMAP`).
    ticks : tuple of float or None
        Color bar ticks (None: matplotlib's choice).
    tick_format : str or None
        Format of the ticks' labels (``format`` of ``Figure.colorbar``; None:
        matplotlib's).
    """

    norm: Normalize
    description: str
    extend: str
    signed: bool
    ticks: tuple[float, ...] | None = None
    tick_format: str | None = None


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
    """A scale from the smallest value to the largest, linear up to the ``clip_percentile``
    percentile and compressed above it.

    Values up to the percentile take the lower ``1 - COMPRESSED_TOP`` of the color map
    linearly, the few above it (a stress singularity) the top :data:`COMPRESSED_TOP`,
    linearly too: the bulk keeps its contrast and the color bar still ends at the largest
    value.

    Parameters
    ----------
    values : numpy.ndarray
        ``(n,)`` field values.
    clip_percentile : float
        Percentile of ``values`` where the compressed part begins (100: a plain linear
        scale); the description says where.
    """
    values = np.asarray(values, dtype=float)
    vmin, vmax = float(values.min()), float(values.max())
    knee = max(float(np.percentile(values, clip_percentile)), vmin)
    if not (clip_percentile < 100.0 and vmin < knee < vmax):
        return ColorScale(Normalize(vmin, vmax), "", "neither", False)
    return ColorScale(FuncNorm(_two_slopes(vmin, knee, vmax), vmin, vmax),
                      f"linear to the {_ordinal(clip_percentile)} percentile ({knee:.3g}), "
                      f"compressed above it up to the largest value", "neither", False,
                      _knee_ticks(vmin, knee, vmax), "{x:.3g}")


def _two_slopes(vmin: float, knee: float, vmax: float):
    """``(forward, inverse)`` of the map taking ``[vmin, knee]`` to ``[0, 1 - top]`` and
    ``[knee, vmax]`` to ``[1 - top, 1]`` (``top`` = :data:`COMPRESSED_TOP`), each piece
    linear and extended beyond its ends (the color bar's axis asks for its margins)."""
    bend = 1.0 - COMPRESSED_TOP
    low, high = bend / (knee - vmin), COMPRESSED_TOP / (vmax - knee)

    def forward(x):
        x = np.asarray(x, dtype=float)
        return np.where(x <= knee, (x - vmin) * low, bend + (x - knee) * high)

    def inverse(y):
        y = np.asarray(y, dtype=float)
        return np.where(y <= bend, vmin + y / low, knee + (y - bend) / high)

    return forward, inverse


def _knee_ticks(vmin: float, knee: float, vmax: float) -> tuple[float, ...]:
    """Round ticks of the linear part, the knee where the compressed part begins and the
    largest value (the end of the color bar); round ticks within a tenth of the linear
    part's length below the knee are left out, so that the labels do not overlap."""
    ticks = MaxNLocator(5).tick_values(vmin, knee)
    gap = 0.1 * (knee - vmin)
    return tuple(float(t) for t in ticks if vmin <= t <= knee - gap) + (knee, vmax)


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
