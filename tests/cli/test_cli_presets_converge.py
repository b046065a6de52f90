"""Every preset converges within its own ``stop.max_iter``.

The iteration counts and objectives are those the comments above each preset's ``[stop]``
table quote; the runs agree with them to a few percent (an iteration count that hangs on the
rounding, to its measured spread: ``ITERATION_RTOL``), so a change that slows a preset down
(or a comment that no longer holds) shows here. The longer runs are marked slow.
"""

import json
import tomllib

import pytest
from cli_helpers import run

from fesens.config import preset_names, preset_text

#: Preset -> (iterations to convergence, final objective), as run with CHOLMOD.
CONVERGED = {
    "mbb": (144, 233.71),
    "lbracket": (135, 175.48),
    "cantilever": (217, 91.153),
    "heatsink": (224, 1.5760e-4),
    "lbracket_stress": (278, 119.28),  # the middle of 241 to 325: see ITERATION_RTOL
    "cantilever3d": (162, 140.24),
    # the 3D heat sink: thermal compliance of a uniform source drained at one face's middle
    "heatsink3d": (133, 4.8037e-4),
    # −KS of the lowest three eigenvalues (maximized); the middle of 205 to 312 iterations
    "frequency": (258, -1.8039e5),
    # compliant mechanisms: the output displacement (minimized; negative against the input)
    "inverter": (67, -0.95756),
    "gripper": (72, -0.70119),
    "inverter3d": (43, -2.5008),
    # Sigmund's 99-line mechanism code's own run (sensitivity filter, OC): its numbers in
    # tests/opt/test_mechanism_reference.py
    "inverter_oc": (189, -1.1132),
    # the worst (eroded) compliance of the robust formulation's three designs
    "robust": (234, 220.53),
    # the robust inverter: the worst (eroded) output displacement
    "inverter_robust": (131, -0.5030),
    "inverter3d_robust": (156, -1.2678),
    # time-dependent designs: the KS peak over time of a chip's temperature under a heat
    # pulse, and the dynamic compliance |f · u| at a driving frequency
    "heatsink_pulse": (58, 0.20187),
    "dynamic_compliance": (53, 79.657),
    # the MBB beam printed upwards through projection and the overhang filter (MMA), and a
    # 3D cantilever printed upwards
    "overhang": (124, 206.92),
    "overhang3d": (124, 20.778),
    # end compliance f·u through the finite-strain Newton solve at a large load
    "nonlinear_cantilever": (158, 2.1473e-3),
    # two solid phases and void by the ordered SIMP interpolation (MMA), mass fraction 0.4
    "multimaterial": (235, 214.35),
    # the volume fraction under a von Mises limit (adaptive p-norm, Le et al. 2010)
    "lbracket_stress_constrained": (409, 0.36201),
    # compliance with a lower bound on the buckling load factor (KS of the lowest three)
    "column_buckling": (61, 5.9274),
    # the plastic work dissipated along a load history (maximized), J2 plasticity; its move
    # limit shrinks after 20 iterations
    "plastic_cantilever": (79, -452.64),
}
#: How far the iteration count may stray from CONVERGED's: 10 %, except where the count hangs
#: on the rounding. The stress design's largest change keeps returning to the move limit
#: until one step falls below 0.01, and which step that is moves with the last bits: starts
#: moved by 1e-12 (relative) and other OpenBLAS kernels stopped it after 241 to 325
#: iterations (24 runs), the p-norm within 0.15 %. mbb, lbracket, cantilever, heatsink and
#: cantilever3d stopped at the same iteration in every such run. The frequency design's
#: change falls below 0.01 only once the last gray members settle after the projection's
#: final sharpening: 205 to 312 iterations over 6 such runs, the objective within 0.7 %.
#: The overhang preset stops after 124 iterations on the machine that recorded it and after
#: 139 on another CPU (the same code, 206.92 and 206.925: its projection's continuation
#: meets the change rule at another step when the last bits differ).
ITERATION_RTOL = {"lbracket_stress": 0.25, "frequency": 0.25, "overhang": 0.15}
#: Presets that converge (a stop rule with its constraint_tol) in runs this test cannot
#: afford or pin, with why; their full runs are the benchmark named, whose record the docs
#: quote (here: their stopping rule only).
LONG = {"lbracket_stress_local": (
    "benchmarks/bench_stress_bracket.py", "the augmented Lagrangian converges after 362 "
    "iterations (36 s through the CLI on a loaded machine, near this test's budget); starts "
    "moved by 1e-12 stopped after 359 and 363 with objectives 3 % apart, beyond this test's "
    "1 %"),
    "cantilever3d_top3d": (
        "benchmarks/bench_3d_presets.py", "top3d's own cantilever, 200 OC iterations on 4800 "
        "hex8 cells (some 40 s); tests/opt/test_top3d.py follows it with the reference code "
        "at a smaller size")}
#: These take under 10 s each on an idle machine; the others up to a minute (the 3D one).
FAST = ("lbracket", "cantilever", "inverter", "gripper", "inverter3d", "heatsink_pulse",
        "dynamic_compliance", "column_buckling")


def test_every_preset_states_its_stopping_rule_and_is_checked_here():
    assert set(preset_names()) == set(CONVERGED) | set(LONG)
    assert not set(CONVERGED) & set(LONG)
    for name in LONG:
        stop = tomllib.loads(preset_text(name))["stop"]
        assert set(stop) <= {"max_iter", "tol_change", "constraint_tol"}, name
        assert stop["tol_change"] == 0.01 and stop.get("constraint_tol", 0) <= 0.02, name
    for name in CONVERGED:
        stop = tomllib.loads(preset_text(name))["stop"]
        assert set(stop) == {"max_iter", "tol_change"}, name
        assert stop["tol_change"] == 0.01, name
        # Room for another solver's rounding: the counts differ by up to 5 % between backends.
        assert stop["max_iter"] >= 1.2 * CONVERGED[name][0], name


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=() if name in FAST else pytest.mark.slow)
    for name in sorted(CONVERGED)])
def test_preset_converges_within_its_iteration_limit(name, tmp_path):
    result = run("optimize", "--preset", name, "--out", tmp_path / name, "--quiet")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / name / "summary.json").read_text())
    assert summary["status"] == "converged", (summary["iterations"], summary["objective"])
    iterations, objective = CONVERGED[name]
    assert summary["iterations"] == pytest.approx(iterations, rel=ITERATION_RTOL.get(name, 0.1))
    assert summary["objective"]["value"] == pytest.approx(objective, rel=0.01)
