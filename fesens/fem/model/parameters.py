"""Declared parameters of a model: what a physics accepts, and how each value is checked.

A physics lists its parameters once (:attr:`LinearModel.parameters
<fesens.fem.model.linear.LinearModel.parameters>`); the solve checks values against them, and the
configuration, the command line (``--wrt``) and the studies read the same list. Checks run
on the raw values, so a traced value (:mod:`fesens.ad`) is checked without being recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fesens.ad.numpy_wrapper import getval
from fesens.errors import ArgumentTypeError, NonFiniteError


@dataclass(frozen=True)
class Parameter:
    """One differentiable parameter of a model.

    Attributes
    ----------
    name : str
        Keyword of :meth:`~fesens.fem.model.linear.LinearModel.solve`.
    description : str
        One line for help texts and output.
    per_cell : bool
        True: a scalar or one value per cell ``(n_cells,)``; False: a scalar only.
    lower, upper : float or None
        Bounds of the valid range (None: unbounded).
    lower_open, upper_open : bool
        Whether the bounds themselves are excluded.
    unit : str
        Unit hint for output ("" when it depends on the user's unit system).
    """

    name: str
    description: str
    per_cell: bool = True
    lower: float | None = None
    upper: float | None = None
    lower_open: bool = True
    upper_open: bool = True
    unit: str = ""

    def range_text(self) -> str:
        """The valid range, e.g. ``(0, inf)`` or ``(-1, 0.5)``."""
        low = "-inf" if self.lower is None else f"{self.lower:g}"
        high = "inf" if self.upper is None else f"{self.upper:g}"
        return (f"{'(' if self.lower_open or self.lower is None else '['}{low}, "
                f"{high}{')' if self.upper_open or self.upper is None else ']'}")

    def requirement(self) -> str:
        """The range as a phrase: ``must be > 0`` or ``must lie in (-1, 0.5)``."""
        if self.upper is None and self.lower is not None:
            return f"must be {'>' if self.lower_open else '>='} {self.lower:g}"
        if self.lower is None and self.upper is not None:
            return f"must be {'<' if self.upper_open else '<='} {self.upper:g}"
        return f"must lie in {self.range_text()}"

    def check(self, value, n_cells: int) -> np.ndarray:
        """The raw value, checked: shape, finiteness and range.

        Parameters
        ----------
        value : float, array_like or traced
            A scalar, or ``(n_cells,)`` when :attr:`per_cell`.
        n_cells : int

        Returns
        -------
        numpy.ndarray
            The raw (untraced) values, ``()`` or ``(n_cells,)``.

        Raises
        ------
        ArgumentTypeError
            Strings or booleans, not numbers (numpy would read ``"1"`` as 1.0 here, and
            the solve would then fail on the string).
        ValueError
            Wrong shape, or a value outside the range (the message names the parameter).
        NonFiniteError
            NaN or infinity.
        """
        plain = getval(value)
        if np.asarray(plain).dtype.kind in "USb":  # strings, bytes, booleans
            raise ArgumentTypeError(
                f"parameter {self.name!r} must be a number or an array of numbers, got "
                f"{type(plain).__name__} {plain!r:.80}")
        raw = np.asarray(plain, dtype=float)
        wrong = raw.ndim > 1 or (raw.ndim == 1 and (not self.per_cell or raw.shape[0] != n_cells))
        if wrong:
            expected = (f"a scalar or have one value per cell ({n_cells})" if self.per_cell
                        else "a scalar")
            raise ValueError(f"parameter {self.name!r} must be {expected}, got shape {raw.shape}")
        if not np.all(np.isfinite(raw)):
            raise NonFiniteError(f"parameter {self.name!r} contains NaN or infinity")
        bad = np.zeros(raw.shape, dtype=bool)
        if self.lower is not None:
            bad |= raw <= self.lower if self.lower_open else raw < self.lower
        if self.upper is not None:
            bad |= raw >= self.upper if self.upper_open else raw > self.upper
        if np.any(bad):
            first = raw[bad].ravel()[0] if raw.ndim else float(raw)
            raise ValueError(f"{self.description} {self.name} {self.requirement()}; "
                             f"got {first:g}")
        return raw


#: The density scale every model accepts: ``K_e`` is multiplied by ``s_e``.
SCALE = Parameter("scale", "density scale of the cell stiffness (e.g. SIMP x^p)")
