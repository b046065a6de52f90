"""examples/newton_identification.py in fast mode: trust-krylov with fesens's Hessian-vector
products and L-BFGS-B reach the same identified field, Newton in far fewer iterations, one
factorization per iterate; the printed table is the returned numbers."""

import re

import numpy as np
import pytest
from example_helpers import load_example

from fesens.ad import grad, hvp

ROW = re.compile(r"^\s*(trust-krylov|L-BFGS-B) \|\s+(\d+) \|\s+(\d+) \|\s+(\d+) \|\s+(\d+) \|"
                 r"\s+([\d.]+) s \|\s+(\S+) \|\s+([\d.]+)$", re.MULTILINE)


def load():
    return load_example("newton_identification")


def test_newton_krylov_and_lbfgs_identify_the_same_field(capsys):
    module = load()
    numbers = module.main(["--fast"])
    printed = capsys.readouterr().out
    rows = {m[0]: m[1:] for m in ROW.findall(printed)}
    assert set(rows) == {"trust-krylov", "L-BFGS-B"}
    for method, run in numbers["runs"].items():
        iterations, evaluations, products, factorizations, _, gradient_norm, value = rows[method]
        assert (int(iterations), int(evaluations), int(products), int(factorizations)) == (
            run["iterations"], run["evaluations"], run["products"], run["factorizations"])
        assert float(gradient_norm) == pytest.approx(run["gradient_norm"], rel=1e-2)
        assert float(value) == pytest.approx(run["value"], abs=1e-10)
        # converged: the gradient norm at the returned field is below the common tolerance
        assert run["gradient_norm"] <= numbers["gtol"], method
        # at most one factorization per point visited: products and adjoints reuse it
        assert run["factorizations"] <= run["evaluations"], method
    newton, lbfgs = numbers["runs"]["trust-krylov"], numbers["runs"]["L-BFGS-B"]
    assert newton["success"] and newton["products"] > 5 * newton["evaluations"]
    # the same minimizer: fields and objective agree to the tolerance
    assert numbers["difference"] < 1e-3
    assert newton["value"] == pytest.approx(lbfgs["value"], rel=1e-6)
    assert 5 * newton["iterations"] < lbfgs["iterations"]
    match = re.search(r"relative L2 difference ([\d.e+-]+);", printed)
    assert float(match.group(1)) == pytest.approx(numbers["difference"], rel=1e-2)
    # the field is the regularised least-squares fit: near the truth, inside the bounds
    assert numbers["error"] < 0.15
    assert numbers["E_range"][0] > 0.1 and numbers["E_range"][1] < 10.0


def test_the_hessian_vector_products_of_the_example_match_differences_of_its_gradient():
    case = load().setup(fast=True)
    J = case["objective"]
    rng = np.random.default_rng(3)
    m, v = rng.uniform(-0.3, 0.3, case["n_cells"]), rng.standard_normal(case["n_cells"])
    h = 1e-5
    fd = (grad(J)(m + h * v) - grad(J)(m - h * v)) / (2 * h)
    assert np.linalg.norm(hvp(J)(m, v) - fd) <= 1e-6 * np.linalg.norm(fd)
