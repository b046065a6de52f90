"""``fesens.objectives`` exports every objective of ``fesens/objectives/static.py`` through
that module's ``__all__``, so a new objective is its function and its name there."""

import inspect

import fesens.objectives
from fesens.objectives import static


def test_every_public_function_of_static_is_exported():
    defined = {name for name, value in vars(static).items()
               if inspect.isfunction(value) and value.__module__ == static.__name__
               and not name.startswith("_")}
    assert defined <= set(static.__all__), sorted(defined - set(static.__all__))
    assert set(static.__all__) <= set(fesens.objectives.__all__)
    for name in static.__all__:
        assert getattr(fesens.objectives, name) is getattr(static, name)
