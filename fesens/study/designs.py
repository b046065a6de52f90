"""Designs of a parameter study: which parameter values each sample gets.

A :class:`Parameter` is a named scalar with a range (sampled), a list of values (grid), or
one fixed value (the same in every sample, still differentiated). A :class:`Design` is the
resulting table: one row per sample, one column per parameter, with integer sample ids.

>>> params = [Parameter("E", range=(60e3, 80e3)), Parameter("nu", value=0.33)]
>>> design = latin_hypercube(params, 64, seed=1)      # doctest: +SKIP
>>> design.values.shape, design.names                  # doctest: +SKIP
((64, 2), ('E', 'nu'))

Generators: :func:`full_factorial` (every combination of the levels), :func:`latin_hypercube`
and :func:`sobol` (``scipy.stats.qmc``, seeded, scrambled) and :func:`from_table` (rows given
by the user). Sampled values are mapped from the unit cube to each range, linearly or (with
``scale="log"``) uniformly in the logarithm.
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


class DesignError(ValueError):
    """A parameter or design specification is invalid; the message names it."""


@dataclass(frozen=True)
class Parameter:
    """A named scalar parameter of a study.

    Parameters
    ----------
    name : str
        Key of the parameter in the ``params`` dict the model's evaluate function gets,
        and its column in the results.
    range : (float, float), optional
        ``(low, high)`` for sampled designs, and for grids together with ``levels``.
    values : sequence of float, optional
        Grid values (instead of ``range`` and ``levels``).
    levels : int, optional
        Number of equally spaced grid values over ``range`` (ends included).
    value : float, optional
        A fixed value: the same in every sample (its gradients are still reported).
    scale : {"linear", "log"}
        How ``range`` is filled: equal steps, or equal ratios (``low > 0``).
    """

    name: str
    range: tuple[float, float] | None = None
    values: tuple[float, ...] | None = None
    levels: int | None = None
    value: float | None = None
    scale: str = "linear"

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise DesignError(f"a parameter name must be a non-empty string, got {self.name!r}")
        given = [k for k in ("range", "values", "value") if getattr(self, k) is not None]
        if len(given) != 1:
            raise DesignError(f"parameter {self.name!r}: give exactly one of range, values or "
                              f"value (got {', '.join(given) or 'none'})")
        if self.scale not in ("linear", "log"):
            raise DesignError(f"parameter {self.name!r}: scale must be 'linear' or 'log', "
                              f"got {self.scale!r}")
        if self.range is not None:
            self._check_range()
        if self.values is not None:
            values = tuple(_finite(self.name, v) for v in self.values)
            if not values:
                raise DesignError(f"parameter {self.name!r}: values is empty")
            object.__setattr__(self, "values", values)
        if self.value is not None:
            object.__setattr__(self, "value", _finite(self.name, self.value))
        if self.levels is not None and (self.range is None or not isinstance(self.levels, int)
                                        or self.levels < 1):
            raise DesignError(f"parameter {self.name!r}: levels must be an integer ≥ 1 and "
                              "goes with a range")

    def _check_range(self) -> None:
        try:
            low, high = (_finite(self.name, v) for v in self.range)
        except (TypeError, ValueError):
            raise DesignError(f"parameter {self.name!r}: range must be two numbers "
                              f"(low, high), got {self.range!r}") from None
        if not low < high:
            raise DesignError(f"parameter {self.name!r}: range needs low < high, got "
                              f"({low:g}, {high:g})")
        if self.scale == "log" and low <= 0:
            raise DesignError(f"parameter {self.name!r}: a log scale needs a range > 0, got "
                              f"({low:g}, {high:g})")
        object.__setattr__(self, "range", (low, high))

    @property
    def fixed(self) -> bool:
        return self.value is not None

    def from_unit(self, u: np.ndarray) -> np.ndarray:
        """Map unit-interval samples ``u`` to values in the range (fixed: the value)."""
        if self.fixed:
            return np.full(np.shape(u), self.value)
        if self.range is None:
            raise DesignError(f"parameter {self.name!r} has grid values, not a range; "
                              "sampled designs need a range (or a fixed value)")
        low, high = self.range
        if self.scale == "log":
            return np.exp(np.log(low) + u * (np.log(high) - np.log(low)))
        return low + u * (high - low)

    def grid(self) -> np.ndarray:
        """The grid values: ``values``, ``levels`` points over the range, or the fixed value."""
        if self.fixed:
            return np.array([self.value])
        if self.values is not None:
            return np.array(self.values)
        if self.levels is None:
            raise DesignError(f"parameter {self.name!r}: a grid needs values or levels")
        if self.levels == 1:
            return np.array([self.from_unit(np.array(0.5)).item()])
        return self.from_unit(np.linspace(0.0, 1.0, self.levels))


def _finite(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise DesignError(f"parameter {name!r}: {value!r} is not a number")
    value = float(value)
    if not math.isfinite(value):
        raise DesignError(f"parameter {name!r}: {value!r} is not finite")
    return value


class Design:
    """Parameter values of every sample.

    Parameters
    ----------
    names : sequence of str
        Parameter names (columns).
    values : array_like
        ``(n_samples, n_parameters)``.
    ids : sequence of int, optional
        Sample ids (default ``0 .. n_samples - 1``); unique, used to resume a study.
    kind : str
        How the design was made (``"grid"``, ``"lhs"``, ``"sobol"``, ``"table"``).
    """

    def __init__(self, names: Sequence[str], values, ids: Sequence[int] | None = None,
                 kind: str = "table"):
        self.names = tuple(names)
        if len(set(self.names)) != len(self.names) or not self.names:
            raise DesignError(f"parameter names must be unique and not empty: {self.names}")
        self.values = np.array(values, dtype=float).reshape(-1, len(self.names))
        if not np.all(np.isfinite(self.values)):
            raise DesignError("design values must be finite")
        n = self.values.shape[0]
        self.ids = np.arange(n) if ids is None else np.asarray(ids, dtype=int)
        if self.ids.shape != (n,) or len(np.unique(self.ids)) != n:
            raise DesignError(f"sample ids must be {n} unique integers")
        self.kind = kind

    def __len__(self) -> int:
        return self.values.shape[0]

    def __repr__(self) -> str:
        return f"Design({self.kind}, {len(self)} samples, parameters {list(self.names)})"

    def samples(self) -> list[tuple[int, dict[str, float]]]:
        """``[(sample_id, {name: value})]`` in design order."""
        return [(int(i), dict(zip(self.names, map(float, row), strict=True)))
                for i, row in zip(self.ids, self.values, strict=True)]

    def column(self, name: str) -> np.ndarray:
        """Values of one parameter, ``(n_samples,)``."""
        if name not in self.names:
            raise KeyError(f"no parameter {name!r}; parameters: {list(self.names)}")
        return self.values[:, self.names.index(name)]


def _names(parameters: Sequence[Parameter]) -> list[str]:
    parameters = list(parameters)
    if not parameters or not all(isinstance(p, Parameter) for p in parameters):
        raise DesignError("give a non-empty list of Parameter objects")
    names = [p.name for p in parameters]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise DesignError(f"parameter names must be unique; repeated: {duplicates}")
    return names


def full_factorial(parameters: Sequence[Parameter]) -> Design:
    """Every combination of the parameters' grid values; the last parameter varies fastest.

    ``n_samples = Π_k n_levels(k)`` (a fixed parameter counts as one level).
    """
    names = _names(parameters)
    grids = [p.grid() for p in parameters]
    values = np.array(list(itertools.product(*grids)), dtype=float)
    return Design(names, values, kind="grid")


def _qmc_engine(cls, dim: int, seed: int | None):
    """A ``scipy.stats.qmc`` engine seeded through ``rng=`` (scipy ≥ 1.15) or ``seed=``."""
    generator = np.random.default_rng(seed)
    keyword = "rng" if "rng" in inspect.signature(cls).parameters else "seed"
    return cls(d=dim, **{keyword: generator})


def _sampled(parameters: Sequence[Parameter], unit: np.ndarray, kind: str) -> Design:
    """Map unit-cube points ``(n, n_free)`` to the ranges; fixed parameters get their value."""
    free = iter(range(unit.shape[1]))
    columns = [np.full(len(unit), p.value) if p.fixed else p.from_unit(unit[:, next(free)])
               for p in parameters]
    return Design(_names(parameters), np.column_stack(columns), kind=kind)


def _check_count(n_samples, what: str) -> int:
    if isinstance(n_samples, bool) or not isinstance(n_samples, int | np.integer) \
            or n_samples < 1:
        raise DesignError(f"{what} needs a number of samples ≥ 1, got {n_samples!r}")
    return int(n_samples)


def _free_dim(parameters: Sequence[Parameter], what: str) -> int:
    _names(parameters)
    dim = sum(not p.fixed for p in parameters)
    if dim == 0:
        raise DesignError(f"{what} needs at least one parameter with a range")
    return dim


def latin_hypercube(parameters: Sequence[Parameter], n_samples: int,
                    seed: int | None = 0) -> Design:
    """Latin hypercube sample: each range is cut into ``n_samples`` equal strata (equal in
    the logarithm for log scales) and every stratum holds exactly one sample."""
    from scipy.stats import qmc

    n = _check_count(n_samples, "a Latin hypercube")
    dim = _free_dim(parameters, "a Latin hypercube")
    unit = _qmc_engine(qmc.LatinHypercube, dim, seed).random(n)
    return _sampled(parameters, unit, "lhs")


def sobol(parameters: Sequence[Parameter], n_samples: int, seed: int | None = 0) -> Design:
    """Scrambled Sobol' sample of ``n_samples = 2^m`` points (the balance properties of the
    sequence hold for powers of two only, so other counts are refused)."""
    from scipy.stats import qmc

    n = _check_count(n_samples, "a Sobol sample")
    m = n.bit_length() - 1
    if n != 2**m:
        raise DesignError(f"a Sobol sample needs a power of two samples (balance holds only "
                          f"for n = 2^m); got {n}, use {2**m} or {2**(m + 1)}")
    dim = _free_dim(parameters, "a Sobol sample")
    unit = _qmc_engine(qmc.Sobol, dim, seed).random_base2(m)
    return _sampled(parameters, unit, "sobol")


def from_table(rows, parameters: Sequence[str] | None = None) -> Design:
    """A design given by the user, one row per sample.

    Parameters
    ----------
    rows : pandas.DataFrame, mapping of columns, or iterable of mappings
        Parameter values; a ``sample`` column (if present) gives the sample ids.
    parameters : sequence of str, optional
        Which columns are parameters (default: every column but ``sample``).
    """
    columns = _columns(rows)
    ids = columns.pop("sample", None)
    names = list(parameters) if parameters is not None else list(columns)
    missing = [n for n in names if n not in columns]
    if missing:
        raise DesignError(f"the table has no column(s) {missing}; columns: {list(columns)}")
    values = np.column_stack([np.asarray(columns[n], dtype=float) for n in names]) \
        if names else np.zeros((0, 0))
    return Design(names, values, ids=None if ids is None else np.asarray(ids, dtype=int),
                  kind="table")


def _columns(rows) -> dict[str, list]:
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):  # a DataFrame
        return {str(k): list(v) for k, v in rows.to_dict(orient="list").items()}
    if isinstance(rows, Mapping):
        return {str(k): list(v) for k, v in rows.items()}
    rows = list(rows) if isinstance(rows, Iterable) else None
    if not rows or not all(isinstance(r, Mapping) for r in rows):
        raise DesignError("a table design needs a DataFrame, a dict of columns or a "
                          "non-empty list of dicts")
    keys = list(rows[0])
    if any(list(r) != keys and set(r) != set(keys) for r in rows):
        raise DesignError("every row of the table must have the same keys")
    return {str(k): [r[k] for r in rows] for k in keys}
