"""The physics registry: every physics fesens knows, by its config name.

Config validation, model building, the command line's choices, studies and the results
writer ask this registry; nothing outside :mod:`fesens.physics` names a physics.

To add a physics: write its module (a :class:`~fesens.fem.model.LinearModel` subclass with
its parameters, kernels, post-processing and config fragment) and add one line to
``_BUILT_IN`` below. A physics defined elsewhere (a plug-in, a test) registers with
:func:`register_physics`.
"""

from __future__ import annotations

from fesens.fem.model import LinearModel
from fesens.physics.conduction import HeatConduction
from fesens.physics.elasticity import Elasticity

_BUILT_IN: tuple[type[LinearModel], ...] = (
    Elasticity,
    HeatConduction,
)


class PhysicsRegistry:
    """Physics classes by name (:attr:`LinearModel.name`)."""

    def __init__(self, classes=()):
        self._classes: dict[str, type[LinearModel]] = {}
        for cls in classes:
            self.register(cls)

    def register(self, cls: type[LinearModel]) -> type[LinearModel]:
        """Add ``cls`` under ``cls.name`` (usable as a class decorator)."""
        if not cls.name:
            raise ValueError(f"{cls.__name__} has no name: set the class attribute 'name'")
        if cls.name in self._classes and self._classes[cls.name] is not cls:
            raise ValueError(f"a physics named {cls.name!r} is registered already "
                             f"({self._classes[cls.name].__name__})")
        self._classes[cls.name] = cls
        return cls

    def unregister(self, name: str) -> None:
        """Remove a physics added with :meth:`register` (tests, plug-in reloads)."""
        self._classes.pop(name, None)

    def get(self, name: str) -> type[LinearModel]:
        """The physics class named ``name``.

        Raises
        ------
        KeyError
            Naming the known physics.
        """
        try:
            return self._classes[name]
        except KeyError:
            raise KeyError(f"unknown physics {name!r}; known: {', '.join(self._classes)}"
                           ) from None

    def names(self) -> tuple[str, ...]:
        """Registered names, in registration order."""
        return tuple(self._classes)

    def __contains__(self, name: object) -> bool:
        return name in self._classes

    def __iter__(self):
        return iter(self._classes.values())


#: The registry everything asks (built-in physics; plug-ins add themselves).
PHYSICS = PhysicsRegistry(_BUILT_IN)


def physics_class(name: str) -> type[LinearModel]:
    """The physics registered as ``name`` (see :data:`PHYSICS`)."""
    return PHYSICS.get(name)


def register_physics(cls: type[LinearModel]) -> type[LinearModel]:
    """Register a physics defined outside fesens (a class decorator)."""
    return PHYSICS.register(cls)
