"""The registries of :mod:`fesens.opt` (optimizers, filters, interpolations, projections):
each entry is found under its own ``name`` and subclasses the base that declares its
capabilities, and the factories accept exactly the registry."""

import importlib
import inspect

import numpy as np
import pytest
from opt_helpers import mbb_model

from fesens.mesh import rectangle
from fesens.opt import (
    FILTERS,
    INTERPOLATIONS,
    OPTIMIZERS,
    PROJECTIONS,
    RAMP,
    Continuation,
    DesignProblem,
    Filter,
    Heaviside,
    Interpolation,
    Optimizer,
    Projection,
    make_filter,
    make_optimizer,
    optimizer_options,
)


@pytest.mark.parametrize(("registry", "base"), [
    (OPTIMIZERS, Optimizer), (FILTERS, Filter), (INTERPOLATIONS, Interpolation),
    (PROJECTIONS, Projection)])
def test_every_entry_is_registered_under_its_name(registry, base):
    assert registry and all(cls.name == name for name, cls in registry.items())
    assert all(issubclass(cls, base) for cls in registry.values())


def test_the_capabilities_are_declared_where_they_are_offered():
    """What the loop, the design problem and the config read of a class, by its name."""
    assert [n for n, c in OPTIMIZERS.items() if c.bound_constraints] == ["mma"]
    assert [n for n, c in INTERPOLATIONS.items() if c.interpolates_mass] == ["du-olhoff",
                                                                            "pedersen"]
    assert [n for n, c in INTERPOLATIONS.items() if c.offers_cost] == ["ordered"]
    assert [n for n, c in INTERPOLATIONS.items() if c.multiphase] == ["ordered"]
    assert [n for n, c in PROJECTIONS.items() if c.linear] == ["none"]
    rho = np.linspace(0.0, 1.0, 5)
    assert INTERPOLATIONS["simp"]().mass(rho) is rho  # without a law of its own: ρ itself


@pytest.mark.parametrize("name", ["Heaviside", "NoProjection", "PROJECTIONS"])
def test_the_projections_old_home_warns(name):
    interpolation = importlib.import_module("fesens.opt.interpolation")
    with pytest.deprecated_call(match=f"fesens.opt.projection.{name}"):
        moved = getattr(interpolation, name)
    assert moved is importlib.import_module("fesens.opt.projection").__dict__[name]


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_every_optimizer_is_made_with_its_registered_options(name):
    cls = OPTIMIZERS[name]
    assert isinstance(cls.general_constraints, bool)
    options = optimizer_options(name)
    assert options == {p.name: p.default for p in inspect.signature(cls).parameters.values()}
    optimizer = make_optimizer(name, **options)
    assert type(optimizer) is cls
    assert all(callable(getattr(optimizer, m)) for m in ("step", "state", "load_state"))
    with pytest.raises(ValueError, match=f"accepted: {', '.join(sorted(options))}$"):
        make_optimizer(name, no_such_option=1.0)


def test_an_unknown_optimizer_names_the_registry():
    message = f"unknown optimizer 'sqp'; choose one of {', '.join(OPTIMIZERS)}$"
    for factory in (make_optimizer, optimizer_options):
        with pytest.raises(ValueError, match=message):
            factory("sqp")


@pytest.mark.parametrize("name", list(FILTERS))
def test_make_filter_builds_every_registered_filter(name):
    mesh = rectangle(4, 2, 4.0, 2.0)
    density_filter = make_filter(name, mesh, 1.5)
    assert type(density_filter) is FILTERS[name]
    if FILTERS[name].takes_radius:
        assert density_filter.radius == 1.5


def test_an_unknown_filter_names_the_registry():
    with pytest.raises(ValueError, match=f"choose one of {', '.join(FILTERS)}$"):
        make_filter("gaussian", rectangle(4, 2, 4.0, 2.0), 1.5)


def test_schedules_done_once_every_continuation_is_final():
    """What both the loop and a resumed run ask before stopping on a small change."""
    def problem(**options) -> DesignProblem:
        return DesignProblem(mbb_model(6, 2), lambda state, rho: 0.0, volume_fraction=0.5,
                             **options)

    scheduled = problem(interpolation=RAMP(Continuation(2.0, 8.0, 5, step=3.0)),
                        projection=Heaviside(Continuation(1.0, 4.0, 10, factor=2.0)))
    # RAMP q: 2, 5, 8 from iteration 11; Heaviside β: 1, 2, 4 from iteration 21, held one
    # iteration more (final_iterations = 1)
    assert [scheduled.schedules_done(i) for i in (1, 12, 21, 22)] == [False] * 3 + [True]
    assert problem().schedules_done(1)
