"""Models for the study tests: analytic ones with closed-form sensitivities, a small FE
model, and evaluate functions that fail, interrupt or kill their worker process.

Everything is module-level (or a frozen dataclass), so it pickles by reference: worker
processes import this module (pytest puts its folder on ``sys.path``, which spawned
processes inherit).
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from fesens.ad import getval
from fesens.mesh import rectangle
from fesens.objectives import Differentiable, compliance, displacement_at, stress_pnorm
from fesens.physics import Elasticity
from fesens.study import Parameter, ParametricModel, from_table

#: ``y = C a² / b`` (S_a = 2, S_b = −1 everywhere) and ``z = sin a + b``.
C = 2.0


def constant(value: float) -> float:
    return value


def power_law(c: float, p: dict) -> dict:
    return {"y": c * p["a"] ** 2 / p["b"], "z": np.sin(p["a"]) + p["b"]}


def power_model(evaluate=power_law) -> ParametricModel:
    return ParametricModel(partial(constant, C), evaluate, outputs=("y", "z"), name="power")


def numbered_design(n: int):
    """``a = 1 .. n`` (identifies the sample), ``b = 1 + a / 10``."""
    a = np.arange(1.0, n + 1.0)
    return from_table({"a": a, "b": 1.0 + a / 10.0})


@dataclass(frozen=True)
class Failing:
    """``power_law``, but samples with ``a`` in ``bad`` raise."""

    bad: tuple[float, ...]

    def __call__(self, c, p):
        if p["a"] in self.bad:
            raise ValueError(f"a = {getval(p['a']):g}: rejected, as asked "
                             '(with a comma, "quotes")')
        return power_law(c, p)


@dataclass(frozen=True)
class Logged:
    """``power_law``, appending ``a`` to ``log`` at every evaluation (any process)."""

    log: str

    def __call__(self, c, p):
        with open(self.log, "a", encoding="utf-8") as handle:
            handle.write(f"{float(getval(p['a']))!r}\n")
        return power_law(c, p)


def logged_values(log: Path) -> list[float]:
    return [float(x) for x in log.read_text().split()] if log.exists() else []


@dataclass(frozen=True)
class Interrupting:
    """``power_law`` until ``a == stop``: then a KeyboardInterrupt (as Ctrl-C would)."""

    stop: float

    def __call__(self, c, p):
        if p["a"] == self.stop:
            raise KeyboardInterrupt
        return power_law(c, p)


@dataclass(frozen=True)
class Killing:
    """``power_law``, but the sample with ``a == victim`` kills its own worker process
    (SIGKILL): on its first attempt only (a marker file records the killed pid), or every
    time with ``always``."""

    marker_dir: str
    victim: float
    always: bool = False

    def __call__(self, c, p):
        if p["a"] == self.victim:
            marker = Path(self.marker_dir) / f"killed-{os.getpid()}"
            if self.always or not any(Path(self.marker_dir).glob("killed-*")):
                marker.write_text(str(os.getpid()))
                os.kill(os.getpid(), signal.SIGKILL)
        return power_law(c, p)


def killed_pids(marker_dir: Path) -> list[int]:
    return [int(p.read_text()) for p in marker_dir.glob("killed-*")]


def local_cluster(n_workers: int):
    """A Dask ``LocalCluster`` of ``n_workers`` processes on 127.0.0.1, quiet, on ports
    chosen by the system (scheduler and its HTTP server: another cluster may run).

    ``dashboard_address=None`` would still start the scheduler's HTTP server on the fixed
    port 8787 (and warn, an error in the tests, when it is taken): ask for port 0."""
    from distributed import LocalCluster

    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                        host="127.0.0.1", dashboard_address="127.0.0.1:0",
                        memory_limit="1GiB", silence_logs=50)


# ------------------------------------------------------------------ a small FE model
FE_PARAMETERS = [Parameter("E", range=(0.8, 1.2)), Parameter("nu", range=(0.25, 0.35)),
                 Parameter("P", range=(1.0, 2.0)), Parameter("t", range=(0.5, 1.5))]


def cantilever() -> Differentiable:
    """A 12 x 4 quad4 cantilever, clamped left, point load ``tip`` at the lower right."""
    model = Elasticity(rectangle(12, 4, 3.0, 1.0, cell_type="quad4"), plane="stress")
    model.fix("left")
    model.point_load((3.0, 0.0), (0.0, -1.0), name="tip")
    return Differentiable(model)


def cantilever_outputs(problem: Differentiable, p: dict) -> dict:
    """Thickness ``t`` as a per-cell field (the density scale), E, ν and the load."""
    thickness = p["t"] * np.ones(problem.model.mesh.n_cells)
    state = problem.solve(E=p["E"], nu=p["nu"], scale=thickness, loads={"tip": p["P"]})
    return {"compliance": compliance(state),
            "deflection": -displacement_at(state, (3.0, 0.0), component=1),
            "stress": stress_pnorm(state, p=6.0)}


def cantilever_model() -> ParametricModel:
    return ParametricModel(cantilever, cantilever_outputs,
                           outputs=("compliance", "deflection", "stress"), name="cantilever")


# ------------------------------------------------------------------ a small study file
#: A 12 x 4 plane-stress beam with a point load ``F`` and a pressure ``p``.
BASE = """
name = "beam"
[mesh]
type = "rectangle"
size = [12.0, 4.0]
cells = [12, 4]
[physics]
plane = "stress"
[material]
E = 1.0
nu = 0.3
[[supports]]
group = "left"
[[loads]]
type = "point"
name = "F"
point = [12.0, 0.0]
value = [0.0, -1.0]
[[loads]]
type = "pressure"
name = "p"
group = "top"
value = 0.1
"""

STUDY = """
name = "beam-study"
base = "base.toml"
[design]
type = "lhs"
samples = 4
seed = 3
[[parameters]]
target = "material.E"
range = [0.8, 1.2]
[[parameters]]
target = "loads.F.magnitude"
name = "F"
range = [1.0, 2.0]
[[parameters]]
target = "loads.F.angle"
name = "angle"
range = [-20.0, 20.0]
[[parameters]]
target = "material.nu"
value = 0.3
[[outputs]]
type = "compliance"
[[outputs]]
type = "displacement"
name = "tip"
point = [12.0, 0.0]
component = "y"
[[outputs]]
type = "stress_ks"
name = "stress"
"""


def write_study(folder: Path, study: str = STUDY, base: str = BASE) -> Path:
    """``folder/study.toml`` and its ``folder/base.toml``; returns the study file."""
    (folder / "base.toml").write_text(base)
    path = folder / "study.toml"
    path.write_text(study)
    return path
