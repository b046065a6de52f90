"""A law's tangent derived from its energy against the hand-written kernel (neo-Hookean).

The derived tangent is ``A = ∂²W/∂H²`` of the compressible neo-Hookean energy (Bonet & Wood
2008, eq. 6.27) by :func:`fesens.ad.pointwise.pointwise_hessian` (reverse over reverse, one
sweep per unit direction, vectorized over every point); the hand-written kernel is the
closed form of :mod:`fesens.physics.hyperelastic_law`. At a random state (``|∇u| ~ 0.05``)
of a cantilever of square quad4 cells (plane strain, 2x2 Gauss points) or cube hex8 cells
(2x2x2), it times

* *points*: ``P`` and ``A`` at every quadrature point (``first_piola_of`` + ``tangent_of``);
* *assembly*: the model's full tangent ``model.tangent(u, fields)`` (``A`` at the points,
  contracted with the shape-function gradients, put on the cached pattern),

median of ``--repeats`` calls after a warm-up, and the peak of Python's allocations
(``tracemalloc``) during one call of each. Targets: derived / hand ≤ 1.3 in time, ≤ 1.2 in
memory.

    python benchmarks/bench_derived_tangent.py [--quick] [--repeats 3] [--append]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import time
import tracemalloc

import numpy as np
from _common import load_average, load_line, machine_lines, ratio, record, table

from fesens.mesh import box, rectangle
from fesens.physics.energy_law import HyperelasticLaw
from fesens.physics.hyperelastic_law import hyperelastic_law
from fesens.physics.hyperelasticity import FiniteStrainElasticity

SIZES = ("400x200", "48x24x24")
QUICK_SIZES = ("100x50", "24x12x12")


def _model(label: str) -> FiniteStrainElasticity:
    cells = tuple(int(n) for n in label.split("x"))
    lengths = tuple(n / cells[1] for n in cells)
    mesh = (rectangle(*cells, *lengths, cell_type="quad4") if len(cells) == 2
            else box(*cells, *lengths, cell_type="hex8"))
    model = FiniteStrainElasticity(mesh, E=1.0, nu=0.3)
    model.fix("left")
    return model


def _median(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _peak_mb(fn) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def _rows(label: str, repeats: int) -> list[list[str]]:
    hand = hyperelastic_law("neo-hookean")
    derived = dataclasses.replace(hand, tangent_of=HyperelasticLaw.from_energy(
        "neo-hookean", "derived", hand.energy_of, check_points=False).tangent_of)
    model = _model(label)
    u = 0.05 * np.random.default_rng(0).standard_normal(model.dofmap.n_dofs) / model.mesh.dim
    fields = model.material_fields()
    _, _, grad_q = model._at_quadrature(u, None)
    lam, mu = model._constants(fields)
    rows = []
    for what in ("points", "assembly"):
        measured = {}
        for kind, law in (("hand", hand), ("derived", derived)):
            model.law = law
            if what == "points":
                def call(law=law):
                    return law.first_piola_of(grad_q, lam, mu), law.tangent_of(grad_q, lam, mu)
            else:
                def call():
                    return model.tangent(u, fields)
            measured[kind] = (_median(call, repeats), _peak_mb(call))
        model.law = hand
        (t_hand, m_hand), (t_derived, m_derived) = measured["hand"], measured["derived"]
        rows.append([label, f"{grad_q.shape[0] * grad_q.shape[1]}", what, f"{t_hand:.3f}",
                     f"{t_derived:.3f}", ratio(t_derived, t_hand), f"{m_hand:.0f}",
                     f"{m_derived:.0f}", ratio(m_derived, m_hand)])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--append", action="store_true", help="append to RESULTS.md")
    args = parser.parse_args()
    loads = [load_average()]
    rows = [row for label in (QUICK_SIZES if args.quick else SIZES)
            for row in _rows(label, args.repeats)]
    loads.append(load_average())
    text = "\n".join([
        "## Derived tangent (energy → reverse over reverse) vs hand-written, neo-Hookean",
        "", *machine_lines(["numpy"]), load_line(loads), "",
        table(["mesh", "points", "what", "hand s", "derived s", "time ratio", "hand MiB",
               "derived MiB", "memory ratio"], rows),
        "", "targets: time ratio ≤ 1.3, memory ratio ≤ 1.2 (tracemalloc peak of one call)",
    ])
    record(text, args.append)


if __name__ == "__main__":
    main()
