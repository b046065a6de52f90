"""OC and MMA through :func:`fesens.opt.optimize` on a design split among the MPI ranks.

Run by ``tests/opt/test_distributed_optimizers.py``, serially and under ``mpirun -n 2``::

    python distributed_optimizers_script.py OUT [SERIAL_OUT]

A problem without FEM: ``n = 40`` design variables, rank ``r`` holding the ``r``-th block of
them (rank 0 the first 20 on two ranks), the compliance-like objective
``Σ_j c_j / x_j²``, the volume constraint ``Σ_j v_j x_j / Σ_j v_j − 0.4 ≤ 0`` (cells of
unequal volumes ``v_j``) and, for MMA, a linear
constraint ``mean(w x) − 0.35 ≤ 0``; the min–max case minimizes the largest of two such
objectives (MMA's bound constraints). Each case runs 30 iterations with a checkpoint, then
15 + a resume to 30, and (with ``SERIAL_OUT``) a resume from the serial run's checkpoint at
iteration 15. Each rank writes ``OUT/<case>-rank<r>.npz``: its part of the design after
every iteration of each run and the history's change column.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from fesens.mpi import collective as launch_collective
from fesens.opt import MMA, OC, Evaluation, optimize

N_DESIGN = 40
VOLUME = 0.4
ITERATIONS, RESUME_AT = 30, 15


class SplitProblem:
    """The analytic problem of the module docstring, this rank's block of the variables."""

    adaptive_tolerance = None
    volume_fraction = VOLUME
    constraints = ()  # the mma case's second constraint is unnamed

    def __init__(self, collective, case: str):
        self._collective = collective
        self.case = case
        self.bounded = case == "minmax"
        self.indices = np.array_split(np.arange(N_DESIGN), collective.size)[collective.rank]
        rng = np.random.default_rng(19)
        self.weights = rng.uniform(0.5, 2.0, (2, N_DESIGN))[:, self.indices]
        self.linear = rng.uniform(0.0, 2.0, N_DESIGN)[self.indices] / N_DESIGN
        volumes = rng.uniform(0.5, 1.5, N_DESIGN)
        self.volumes = volumes[self.indices] / volumes.sum()  # ∂V/∂x, summing to 1
        self.interpolation = SimpleNamespace(parameter=None)
        self.projection = SimpleNamespace(beta=None)

    @property
    def collective(self):
        return self._collective

    def initial_design(self) -> np.ndarray:
        return np.full(self.indices.size, VOLUME)

    def update_schedules(self, iteration: int) -> None:
        pass

    def restore(self, history: list) -> None:
        pass

    def warm_start_arrays(self) -> dict:
        return {}  # no model solve to start

    def restore_warm_start(self, arrays: dict) -> None:
        assert not arrays

    def schedules_done(self, iteration: int) -> bool:
        return True

    def gather_design(self, x: np.ndarray) -> np.ndarray:
        return self._collective.allgather(x)

    def design_part(self, x_whole: np.ndarray) -> np.ndarray:
        return np.asarray(x_whole)[self.indices]

    def volume_excess(self, x, evaluation):
        return lambda candidate: self._collective.dot(self.volumes, candidate) - VOLUME

    def evaluate(self, x: np.ndarray) -> Evaluation:
        total = self._collective.sum
        values = total(self.weights @ x**-2.0)  # both compliance-like functions
        gradients = -2.0 * self.weights * x**-3.0
        volume = self._collective.dot(self.volumes, x)
        constraints, jacobian = [volume - VOLUME], [self.volumes]
        if self.case == "mma":
            constraints.append(total(self.linear @ x) - 0.35)
            jacobian.append(self.linear)
        worst = int(np.argmax(values)) if self.bounded else 0
        bounds = (values, gradients) if self.bounded else (None, None)
        return Evaluation(float(values[worst]), gradients[worst], np.array(constraints),
                          np.vstack(jacobian), x.copy(), float(volume), None, {}, *bounds,
                          collective=self._collective)


def _optimizer(case: str):
    # asymptotes starting close: MMA still converges at iteration 30 (changes ~1e-6), so the
    # designs compared are not yet the round-off noise around the optimum
    return OC(move=0.2) if case == "oc" else MMA(move=0.2, asyinit=0.02)


def _run(collective, case: str, max_iter: int, checkpoint: Path, resume: bool = False):
    """The designs (this rank's part) after each iteration run and the changes."""
    designs: list[np.ndarray] = []
    result = optimize(SplitProblem(collective, case), _optimizer(case), max_iter=max_iter,
                      tol_change=0.0, checkpoint=checkpoint, resume=resume,
                      callback=lambda record, evaluation, x: designs.append(x.copy()))
    return designs, [record["change"] for record in result.history]


def main(out: Path, serial_out: Path | None) -> None:
    collective = launch_collective()
    rank = collective.rank
    for case in ("oc", "mma", "minmax"):
        full, full_change = _run(collective, case, ITERATIONS, out / f"{case}-{rank}-full.npz")
        checkpoint = out / f"{case}-{rank}-resumed.npz"
        first, _ = _run(collective, case, RESUME_AT, checkpoint)
        shutil.copy(checkpoint, out / f"{case}-{rank}-at{RESUME_AT}.npz")
        second, resumed_change = _run(collective, case, ITERATIONS, checkpoint, resume=True)
        results = {"full": np.array(full), "full_change": np.array(full_change),
                   "resumed": np.array(first + second),
                   "resumed_change": np.array(resumed_change)}
        if serial_out is not None:  # the serial run's checkpoint, resumed on these ranks
            crossed = out / f"{case}-{rank}-crossed.npz"
            shutil.copy(serial_out / f"{case}-0-at{RESUME_AT}.npz", crossed)
            results["crossed"] = np.array(_run(collective, case, ITERATIONS, crossed,
                                               resume=True)[0])
        np.savez(out / f"{case}-rank{rank}.npz", **results)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None)
