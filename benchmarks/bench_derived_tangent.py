"""A law's tangent derived from its energy against the hand-written kernel (neo-Hookean).

The hand-written kernel is the closed form of :mod:`fesens.physics.hyperelastic_law`; two
derived tangents of the compressible neo-Hookean energy (Bonet & Wood 2008, eq. 6.27):

* *invariants*: the law of ``W(I₁, I₂, J)``
  (:meth:`~fesens.physics.energy_law.HyperelasticLaw.from_invariants`, the energy
  :func:`~fesens.physics.hyperelastic_law.neo_hookean_of_invariants`): ``fesens.ad``
  derives ``∂W/∂I_a`` and ``∂²W/∂I_a∂I_b``, ``P`` and ``A`` follow from the invariants'
  closed-form derivatives (:mod:`fesens.physics.kinematics`);
* *W(H)*: ``A = ∂²W/∂H²`` of the energy of ``H`` by
  :func:`fesens.ad.pointwise.pointwise_hessian` (reverse over reverse, one sweep per unit
  direction, in blocks of points), the path of a law that is not isotropic (Ogden's and
  the fibre law are written in ``H``).

At a random state (``|∇u| ~ 0.05``) of a cantilever of square quad4 cells (plane strain,
2x2 Gauss points) or cube hex8 cells (2x2x2), it times

* *points*: ``P`` and ``A`` at every quadrature point (``first_piola_of`` + ``tangent_of``;
  the invariants' law derives both, the W(H) law ``A`` only);
* *assembly*: the model's full tangent ``model.tangent(u, fields)`` (``A`` at the points,
  contracted with the shape-function gradients, put on the cached pattern),

the minimum of ``--repeats`` calls after a warm-up, the three laws called in turn in every
repeat (a load that comes and goes on a shared machine hits them alike), and the peak of
Python's allocations (``tracemalloc``) during one call of each. Targets: derived / hand ≤
1.3 in time, ≤ 1.2 in memory.

    python benchmarks/bench_derived_tangent.py [--quick] [--repeats 5] [--append]
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
from fesens.physics.hyperelastic_law import hyperelastic_law, neo_hookean_of_invariants
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


def _minima(calls: dict, repeats: int) -> dict:
    """The least time of ``repeats`` calls of each of ``calls``, called in turn."""
    for call in calls.values():
        call()
    best = dict.fromkeys(calls, np.inf)
    for _ in range(repeats):
        for kind, call in calls.items():
            start = time.perf_counter()
            call()
            best[kind] = min(best[kind], time.perf_counter() - start)
    return best


def _peak_mb(fn) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


KINDS = ("hand", "invariants", "W(H)")


def _rows(label: str, repeats: int) -> list[list[str]]:
    hand = hyperelastic_law("neo-hookean")
    laws = {"hand": hand,
            "invariants": HyperelasticLaw.from_invariants(
                "neo-hookean", "derived from the invariants", neo_hookean_of_invariants,
                check_constants=hand.check_constants_of, check_points=False),
            "W(H)": dataclasses.replace(hand, tangent_of=HyperelasticLaw.from_energy(
                "neo-hookean", "derived", hand.energy_of, check_points=False).tangent_of)}
    model = _model(label)
    # nodal displacements of a cell size's 0.05/dim: ∇u ~ 0.05 at every point (no cell
    # inverted, whatever the mesh)
    size = 1.0 / int(label.split("x")[1])
    u = (0.05 * size / model.mesh.dim
         * np.random.default_rng(0).standard_normal(model.dofmap.n_dofs))
    fields = model.material_fields()
    _, _, grad_q = model._at_quadrature(u, None)
    lam, mu = model._constants(fields)

    def at_points(law):
        return lambda: (law.first_piola_of(grad_q, lam, mu), law.tangent_of(grad_q, lam, mu))

    def assembled(law):
        def call():
            model.law = law
            try:
                return model.tangent(u, fields)
            finally:
                model.law = hand
        return call

    rows = []
    for what, make in (("points", at_points), ("assembly", assembled)):
        calls = {kind: make(law) for kind, law in laws.items()}
        times = _minima(calls, repeats)
        memory = {kind: _peak_mb(call) for kind, call in calls.items()}
        rows.append([label, f"{grad_q.shape[0] * grad_q.shape[1]}", what,
                     *(f"{times[kind]:.3f}" for kind in KINDS),
                     *(ratio(times[kind], times["hand"]) for kind in KINDS[1:]),
                     *(f"{memory[kind]:.0f}" for kind in KINDS),
                     *(ratio(memory[kind], memory["hand"]) for kind in KINDS[1:])])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK_SIZES}")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--append", action="store_true", help="append to RESULTS.md")
    args = parser.parse_args()
    loads = [load_average()]
    rows = [row for label in (QUICK_SIZES if args.quick else SIZES)
            for row in _rows(label, args.repeats)]
    loads.append(load_average())
    text = "\n".join([
        "## Derived tangent (energy of the invariants; energy of H) vs hand-written, "
        "neo-Hookean",
        "", *machine_lines(["numpy"]), load_line(loads), "",
        table(["mesh", "points", "what", *(f"{kind} s" for kind in KINDS),
               *(f"{kind} / hand" for kind in KINDS[1:]), *(f"{kind} MiB" for kind in KINDS),
               *(f"{kind} / hand MiB" for kind in KINDS[1:])], rows),
        "", f"minimum of {args.repeats} repeats; targets: time ratio ≤ 1.3, memory ratio ≤ "
        "1.2 (tracemalloc peak of one call)",
    ])
    record(text, args.append)


if __name__ == "__main__":
    main()
