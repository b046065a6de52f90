"""What the command line refuses of a harmonic config, as bad input (exit 2, one line,
nothing written): a driving frequency at a resonance of the undamped model (naming its
``harmonic.frequencies`` entry and the mode's eigenfrequency), for ``solve`` and
``sensitivity``; an objective that reads more than the field (a stress p-norm), for
``solve`` as ``sensitivity`` refuses it, with the same message. The eigenfrequency comes
from a dense eigendecomposition of the config's assembled matrices."""

import numpy as np
from scipy.linalg import eigh

from fesens.config import build_model, parse_config
from tests.cli.cli_helpers import edit, run, write_config

#: A cantilever under a tip load, undamped, driven at FREQUENCIES.
HARMONIC = """
name = "beam"
[mesh]
type = "rectangle"
size = [2.0, 0.5]
cells = [8, 2]
[physics]
type = "elasticity"
[material]
E = 100.0
nu = 0.3
density = 2.0
[[supports]]
group = "left"
[[loads]]
type = "point"
point = [2.0, 0.0]
value = [0.0, -1.0]
[analysis]
type = "harmonic"
[harmonic]
frequencies = FREQUENCIES
"""


def _first_eigenfrequency(tmp_path) -> float:
    """In Hz, of ``K φ = ω² M φ`` with the config's density."""
    config = parse_config(HARMONIC.replace("FREQUENCIES", "[1.0]"), source="beam",
                          base_dir=tmp_path, optimize=False)
    model = build_model(config)
    K = model.stiffness("ff").tocsr().toarray()
    M = model.mass(2.0).tocsr().toarray()
    return float(np.sqrt(eigh(K, M, eigvals_only=True)[0]) / (2 * np.pi))


def test_solve_and_sensitivity_refuse_a_frequency_at_a_resonance(tmp_path):
    f1 = _first_eigenfrequency(tmp_path)
    text = HARMONIC.replace("FREQUENCIES", f"[{0.5 * f1!r}, {f1 * (1 + 1e-7)!r}]")
    path = write_config(tmp_path, text)
    for command, extra in (("solve", ()), ("sensitivity", ("--wrt", "density"))):
        out = tmp_path / command
        result = run(command, path, *extra, "--out", out)
        assert result.exit_code == 2, result.output
        assert "harmonic.frequencies[1]" in result.output
        assert f"eigenfrequency {f1:.6g} Hz" in result.output
        assert "add damping" in result.output
        assert not out.exists()
    damped = write_config(tmp_path, text + "[damping]\nstiffness = 0.01\n", "damped.toml")
    result = run("solve", damped, "--out", tmp_path / "damped")
    assert result.exit_code == 0, result.output


def test_solve_refuses_a_harmonic_stress_objective_as_sensitivity_does(tmp_path):
    text = edit(HARMONIC.replace("FREQUENCIES", "[0.05]"), 'name = "beam"\n',
                'name = "beam"\n[objective]\ntype = "stress_pnorm"\n')
    path = write_config(tmp_path, text)
    refused = {}
    for command, extra in (("solve", ()), ("sensitivity", ("--wrt", "density"))):
        out = tmp_path / command
        result = run(command, path, *extra, "--out", out)
        assert result.exit_code == 2, result.output
        assert 'objective.type = "stress_pnorm" does not apply to analysis.type = ' \
               '"harmonic"' in result.output
        assert not out.exists()
        refused[command] = result.output
    assert refused["solve"] == refused["sensitivity"]
