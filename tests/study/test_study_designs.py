"""Designs: grid counts and order, Latin hypercube strata, Sobol balance, tables, checks."""

import numpy as np
import pytest

from fesens.study import (
    Design,
    DesignError,
    Parameter,
    from_table,
    full_factorial,
    latin_hypercube,
    sobol,
)


def test_full_factorial_counts_and_order():
    design = full_factorial([Parameter("E", range=(1.0, 3.0), levels=3),
                             Parameter("nu", values=(0.2, 0.3)),
                             Parameter("P", value=5.0),
                             Parameter("t", range=(1.0, 100.0), levels=3, scale="log")])
    assert len(design) == 3 * 2 * 1 * 3 and design.kind == "grid"
    assert design.names == ("E", "nu", "P", "t")
    np.testing.assert_allclose(np.unique(design.column("E")), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.unique(design.column("t")), [1.0, 10.0, 100.0])
    assert np.all(design.column("P") == 5.0)
    np.testing.assert_allclose(design.values[:4, 3], [1.0, 10.0, 100.0, 1.0])  # last fastest
    assert len({tuple(row) for row in design.values}) == len(design)
    assert [sample for sample, _ in design.samples()] == list(range(18))


@pytest.mark.parametrize("scale", ["linear", "log"])
def test_latin_hypercube_has_one_sample_per_stratum(scale):
    n = 50
    params = [Parameter("a", range=(2.0, 8.0), scale=scale), Parameter("b", range=(-1.0, 1.0)),
              Parameter("fixed", value=0.5)]
    design = latin_hypercube(params, n, seed=3)
    assert design.values.shape == (n, 3)
    a = design.column("a")
    unit_a = (np.log(a / 2.0) / np.log(4.0)) if scale == "log" else (a - 2.0) / 6.0
    for unit in (unit_a, (design.column("b") + 1.0) / 2.0):
        assert np.array_equal(np.sort(np.floor(unit * n).astype(int)), np.arange(n))
    assert np.all(design.column("fixed") == 0.5)


def test_latin_hypercube_is_seeded():
    params = [Parameter("a", range=(0.0, 1.0)), Parameter("b", range=(0.0, 1.0))]
    same = latin_hypercube(params, 16, seed=7).values
    np.testing.assert_array_equal(same, latin_hypercube(params, 16, seed=7).values)
    assert not np.array_equal(same, latin_hypercube(params, 16, seed=8).values)


def test_sobol_points_are_balanced():
    m = 6
    n = 2**m
    params = [Parameter(k, range=(0.0, 1.0)) for k in ("a", "b", "c")]
    design = sobol(params, n, seed=11)
    np.testing.assert_array_equal(design.values, sobol(params, n, seed=11).values)
    unit = design.values
    for j in range(3):  # each of the n intervals [k/n, (k+1)/n) of one axis holds one point
        assert np.array_equal(np.sort(np.floor(unit[:, j] * n).astype(int)), np.arange(n))
    for bits_a in range(m + 1):  # (0, m, 2)-net: every 2^a x 2^(m-a) box holds one point
        cells = (np.floor(unit[:, 0] * 2**bits_a).astype(int) * 2**(m - bits_a)
                 + np.floor(unit[:, 1] * 2**(m - bits_a)).astype(int))
        assert np.array_equal(np.sort(cells), np.arange(n))


def test_sobol_refuses_counts_that_are_not_powers_of_two():
    with pytest.raises(DesignError, match="power of two.*got 100, use 64 or 128"):
        sobol([Parameter("a", range=(0.0, 1.0))], 100)


def test_table_design_from_rows_columns_and_dataframe():
    rows = [{"sample": 10, "a": 1.0, "b": 2.0}, {"sample": 20, "a": 3.0, "b": 4.0}]
    design = from_table(rows)
    assert design.names == ("a", "b") and list(design.ids) == [10, 20]
    assert design.samples() == [(10, {"a": 1.0, "b": 2.0}), (20, {"a": 3.0, "b": 4.0})]
    by_columns = from_table({"a": [1, 3], "b": [2, 4]}, parameters=["b"])
    assert by_columns.names == ("b",) and list(by_columns.ids) == [0, 1]
    pd = pytest.importorskip("pandas")
    frame = from_table(pd.DataFrame(rows))
    np.testing.assert_array_equal(frame.values, design.values)


@pytest.mark.parametrize("make, message", [
    (lambda: Parameter("a"), "exactly one of range, values or value"),
    (lambda: Parameter("a", range=(2.0, 1.0)), "low < high"),
    (lambda: Parameter("a", range=(0.0, 1.0), scale="log"), "log scale needs a range > 0"),
    (lambda: Parameter("a", values=(1.0, float("nan"))), "not finite"),
    (lambda: full_factorial([Parameter("a", range=(0.0, 1.0))]), "needs values or levels"),
    (lambda: latin_hypercube([Parameter("a", values=(1.0, 2.0))], 4),
     "sampled designs need a range"),
    (lambda: latin_hypercube([Parameter("a", value=1.0)], 4), "at least one parameter with"),
    (lambda: latin_hypercube([Parameter("a", range=(0, 1)), Parameter("a", value=1.0)], 4),
     "repeated: \\['a'\\]"),
    (lambda: latin_hypercube([Parameter("a", range=(0, 1))], 0), "number of samples ≥ 1"),
    (lambda: from_table({"a": [1.0]}, parameters=["x"]), "no column\\(s\\) \\['x'\\]"),
    (lambda: Design(["a"], [[1.0], [2.0]], ids=[3, 3]), "unique"),
])
def test_invalid_designs_are_refused_with_their_reason(make, message):
    with pytest.raises(DesignError, match=message):
        make()
