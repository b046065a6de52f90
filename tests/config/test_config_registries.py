"""Every choice the config offers is read from its registry: optimizers, filters,
interpolations, projections (:mod:`fesens.opt`) and solver backends (:mod:`fesens.solvers`)."""

import copy
import inspect
import tomllib
from pathlib import Path

import pytest

from fesens.config import ConfigError, build_optimizer, build_problem, resolve
from fesens.opt import FILTERS, INTERPOLATIONS, OPTIMIZERS, PROJECTIONS, optimizer_options
from fesens.solvers import SOLVER_ALIASES, available_solvers

ROOT = Path(__file__).resolve().parents[2]
SMALL = tomllib.loads((ROOT / "tests" / "data" / "small_mbb.toml").read_text())


def config_with(section: str, table: dict):
    raw = copy.deepcopy(SMALL)
    raw[section] = table
    return resolve(raw, base_dir=ROOT, source="test.toml")


def rejection(section: str, table: dict) -> str:
    with pytest.raises(ConfigError) as info:
        config_with(section, table)
    return str(info.value)


def one_of(names) -> str:
    return "expected one of " + ", ".join(f'"{name}"' for name in names)


def test_an_unknown_optimizer_is_rejected_with_the_registry_names():
    message = rejection("optimizer", {"type": "sqp"})
    assert f'optimizer.type = "sqp" is not allowed: {one_of(OPTIMIZERS)}' in message


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_every_optimizer_is_accepted_with_its_registered_options(name):
    config = config_with("optimizer", {"type": name})
    defaults = {k: v for k, v in optimizer_options(name).items() if v is not None}
    assert config.data["optimizer"] == {"type": name, **defaults}
    assert type(build_optimizer(config)) is OPTIMIZERS[name]
    message = rejection("optimizer", {"type": name, "no_such_option": 1.0})
    assert "optimizer.no_such_option" in message


def test_an_option_of_another_optimizer_names_the_one_that_takes_it():
    only_mma = sorted(set(optimizer_options("mma")) - set(optimizer_options("oc")))
    message = rejection("optimizer", {"type": "oc", only_mma[0]: 0.5})
    assert f"optimizer.{only_mma[0]} is not used here: it applies to optimizer.type 'mma'" \
        in message


def test_extra_constraints_need_an_optimizer_that_handles_them():
    raw = copy.deepcopy(SMALL)
    raw["constraints"]["extra"] = [{"type": "stress_pnorm", "limit": 1.0}]
    capable = [name for name, cls in OPTIMIZERS.items() if cls.general_constraints]
    for name, cls in OPTIMIZERS.items():
        raw["optimizer"] = {"type": name}
        if cls.general_constraints:
            resolve(raw, base_dir=ROOT, source="test.toml")
            continue
        with pytest.raises(ConfigError) as info:
            resolve(raw, base_dir=ROOT, source="test.toml")
        assert " or ".join(f'"{n}"' for n in capable) in str(info.value)


@pytest.mark.parametrize(("section", "registry"), [
    ("filter", FILTERS), ("penalization", INTERPOLATIONS), ("projection", PROJECTIONS)])
def test_choices_are_the_registry_names(section, registry):
    message = rejection(section, {"type": "bogus"})
    assert f'{section}.type = "bogus" is not allowed: {one_of(registry)}' in message


@pytest.mark.parametrize("name", list(FILTERS))
def test_every_filter_is_built_from_the_registry(name):
    table = {"type": name, "radius": 1.5} if FILTERS[name].takes_radius else {"type": name}
    problem = build_problem(config_with("filter", table))
    assert type(problem.filter) is FILTERS[name]


#: The keys an entry requires (it has no default for them): the ordered interpolation's phases.
NEEDED = {"ordered": {"moduli": [0.5, 1.0], "densities": [0.5, 1.0]}}


@pytest.mark.parametrize(("section", "registry", "name"), [
    *[("penalization", INTERPOLATIONS, name) for name in INTERPOLATIONS],
    *[("projection", PROJECTIONS, name) for name in PROJECTIONS]])
def test_interpolations_and_projections_are_built_with_their_defaults(section, registry, name):
    needed = NEEDED.get(name, {})
    config = config_with(section, {"type": name, **needed})
    cls = registry[name]
    # a default of None is an absent key of the resolved table
    defaults = {p.name: p.default for p in inspect.signature(cls).parameters.values()
                if p.default is not None and p.name not in needed}
    assert config.data[section] == {"type": name, **defaults, **needed}
    built = build_problem(config)
    assert type(built.interpolation if section == "penalization" else built.projection) is cls


def test_solver_backends_are_the_aliases_and_the_installed_backends():
    message = rejection("solver", {"backend": "bogus"})
    assert one_of([*SOLVER_ALIASES, *available_solvers()]) in message
    for name in [*SOLVER_ALIASES, *available_solvers()]:
        assert config_with("solver", {"backend": name}).data["solver"]["backend"] == name
