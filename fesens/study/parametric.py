"""A parametric model: named scalar parameters in, named scalar outputs (and their
gradients) out.

The model is two functions:

* ``setup() -> context``: the expensive part, run **once per worker process** (read the
  mesh, build the FEM model, wrap it in :class:`~fesens.objectives.Differentiable`, so the
  sparsity pattern and the symbolic factorization are cached for every sample);
* ``evaluate(context, params) -> {output: scalar}``: one sample, written with (traced)
  numpy on ``params = {name: float}``.

Every output is differentiated with respect to every parameter by one forward evaluation
and one reverse sweep per output (:func:`fesens.ad.vjp`; for FE outputs each sweep is one
adjoint solve on the forward factorization).

>>> def setup():                                                    # doctest: +SKIP
...     model = Elasticity(read_mesh("bracket3d.msh"), E=70e3, nu=0.33).fix("fixed")
...     model.traction("load", (0, 0, -1), name="down")
...     return Differentiable(model)
>>> def evaluate(problem, p):                                       # doctest: +SKIP
...     state = problem.solve(E=p["E"], nu=p["nu"], loads={"down": p["P"]})
...     return {"compliance": compliance(state), "stress": stress_pnorm(state)}
>>> model = ParametricModel(setup, evaluate, outputs=("compliance", "stress"))
>>> model.values_and_gradients({"E": 70e3, "nu": 0.33, "P": 2.0})  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fesens.ad import getval, vjp


class OutputError(ValueError):
    """The evaluate function returned something other than the declared scalar outputs."""


@dataclass
class Evaluation:
    """Outputs of one sample and their gradients.

    Attributes
    ----------
    values : dict
        ``{output: float}``.
    gradients : dict
        ``{output: {parameter: float}}``: ``∂ output / ∂ parameter``.
    """

    values: dict[str, float]
    gradients: dict[str, dict[str, float]]

    def non_finite(self) -> list[str]:
        """Outputs whose value or a gradient is NaN or infinite."""
        return [name for name, value in self.values.items()
                if not math.isfinite(value)
                or not all(map(math.isfinite, self.gradients[name].values()))]


class ParametricModel:
    """A function from named parameters to named scalar outputs, with a per-worker setup.

    Parameters
    ----------
    setup : callable
        ``setup() -> context``; run once per process that evaluates samples. Must be
        picklable to run in other processes: a module-level function or
        :func:`functools.partial` of one (closures and lambdas too when ``cloudpickle`` is
        installed, as it is with dask).
    evaluate : callable
        ``evaluate(context, params) -> {output: scalar}`` with ``params = {name: float}``.
        Written with numpy operations that :mod:`fesens.ad` traces.
    outputs : sequence of str, optional
        The output names, in table order; checked against every evaluation. Default: the
        keys of the first evaluation, in its order.
    name : str
        For messages and plots.
    """

    def __init__(self, setup: Callable[[], object],
                 evaluate: Callable[[object, dict[str, float]], Mapping],
                 *, outputs: Sequence[str] | None = None, name: str = "model"):
        if not callable(setup) or not callable(evaluate):
            raise TypeError("setup and evaluate must be callables")
        self.setup = setup
        self.evaluate = evaluate
        self.outputs = None if outputs is None else tuple(outputs)
        if self.outputs is not None and (not self.outputs
                                         or len(set(self.outputs)) != len(self.outputs)):
            raise ValueError(f"outputs must be unique names, got {self.outputs}")
        self.name = name
        self._context = None
        self._prepared = False

    def __getstate__(self):  # the context stays in the process that made it
        state = dict(self.__dict__)
        state["_context"], state["_prepared"] = None, False
        return state

    def __repr__(self) -> str:
        outputs = "inferred" if self.outputs is None else list(self.outputs)
        return f"ParametricModel({self.name!r}, outputs {outputs})"

    @property
    def context(self):
        """The setup result in this process (``setup()`` runs on first access)."""
        if not self._prepared:
            self._context = self.setup()
            self._prepared = True
        return self._context

    def values(self, params: Mapping[str, float]) -> dict[str, float]:
        """Output values only (no tracing)."""
        out = self.evaluate(self.context, dict(params))
        names = self._output_names(out)
        return {name: _scalar(name, out[name]) for name in names}

    def values_and_gradients(self, params: Mapping[str, float]) -> Evaluation:
        """Outputs and ``∂ output / ∂ parameter`` for every output and parameter.

        One traced evaluation, then one reverse sweep per output on the same tape.

        Raises
        ------
        OutputError
            An output is missing, unexpected or not a scalar.
        """
        params = {name: float(value) for name, value in params.items()}
        found: list[str] = []

        def stacked(p):
            out = self.evaluate(self.context, p)
            found[:] = self._output_names(out)
            for name in found:
                _scalar(name, getval(out[name]))
            return np.stack([out[name] for name in found]) if found else np.zeros(0)

        value, pullback = vjp(stacked, params)
        value = np.asarray(value, dtype=float)
        gradients = {}
        for i, name in enumerate(found):
            cotangent = np.zeros(len(found))
            cotangent[i] = 1.0
            g = pullback(cotangent)
            gradients[name] = {p: float(g[p]) for p in params}
        return Evaluation({name: float(value[i]) for i, name in enumerate(found)}, gradients)

    def _output_names(self, out) -> list[str]:
        if not isinstance(out, Mapping):
            raise OutputError(f"evaluate must return a dict of scalar outputs, got "
                              f"{type(out).__name__}")
        names = list(out)
        if self.outputs is not None and set(names) != set(self.outputs):
            missing = sorted(set(self.outputs) - set(names))
            extra = sorted(set(names) - set(self.outputs))
            raise OutputError(f"evaluate returned outputs {names}; expected {list(self.outputs)}"
                              + (f" (missing {missing})" if missing else "")
                              + (f" (unexpected {extra})" if extra else ""))
        return list(self.outputs) if self.outputs is not None else [str(n) for n in names]


def _scalar(name: str, value) -> float:
    shape = np.shape(value)
    if shape != ():
        raise OutputError(f"output {name!r} must be a scalar, got shape {shape}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise OutputError(f"output {name!r} must be a number, got {type(value).__name__}") \
            from None
