"""The physics registry: every physics fesens knows, by its config name.

Config validation, model building, the command line's choices, studies and the results
writer ask this registry; nothing outside :mod:`fesens.physics` names a physics.

To add a physics: write its module (a :class:`~fesens.fem.model.linear.LinearModel` subclass with
its parameters, kernels, post-processing and config fragment) and add one line to
``_BUILT_IN`` below. A physics defined elsewhere (a plug-in, a test) registers with
:func:`register_physics`.
"""

from __future__ import annotations

import inspect

from fesens.fem.model.base import Model
from fesens.fem.model.linear import LinearModel
from fesens.fem.model.parameters import Parameter
from fesens.fem.model.solution import Solution
from fesens.physics.conduction import HeatConduction
from fesens.physics.elasticity import Elasticity
from fesens.physics.elastoplasticity import Elastoplasticity
from fesens.physics.hyperelasticity import FiniteStrainElasticity
from fesens.physics.nonlinear_conduction import NonlinearHeatConduction
from fesens.physics.spec import PhysicsConfig
from fesens.physics.truss import Truss

_BUILT_IN: tuple[type[Model], ...] = (
    Elasticity,
    HeatConduction,
    NonlinearHeatConduction,
    Truss,
    FiniteStrainElasticity,
    Elastoplasticity,
)


def check_declarations(cls: type[LinearModel]) -> None:
    """Check that a physics declares what the rest of fesens reads.

    ``name``, ``field_name``, ``parameters`` (each a :class:`~fesens.fem.model.parameters.Parameter`
    under its own name), a :class:`~fesens.fem.model.solution.Solution` subclass as
    ``solution_class``, and a :class:`~fesens.physics.spec.PhysicsConfig` as ``config`` whose
    material keys are parameters, whose material and option keys are constructor keywords and
    whose load methods exist.

    Raises
    ------
    TypeError
        ``cls`` is no model, or ``config``/``solution_class`` is missing or of the wrong type.
    ValueError
        A name, material key or load method that does not match the class.
    """
    if not (isinstance(cls, type) and issubclass(cls, Model)):
        raise TypeError(f"a physics is a LinearModel or NonlinearModel subclass (a Model), "
                        f"got {cls!r}")
    where = cls.__name__
    for attribute in ("name", "field_name"):
        if not getattr(cls, attribute):
            raise ValueError(f"{where} has no {attribute}: set the class attribute "
                             f"{attribute!r}")
    for key, parameter in cls.parameters.items():
        if not isinstance(parameter, Parameter) or parameter.name != key:
            raise ValueError(f"{where}.parameters[{key!r}] must be a Parameter named {key!r}")
    if not (isinstance(cls.solution_class, type) and issubclass(cls.solution_class, Solution)):
        raise TypeError(f"{where}.solution_class must be a Solution subclass")
    _check_fragment(cls)


def _check_fragment(cls: type[LinearModel]) -> None:
    """The configuration fragment of :func:`check_declarations`."""
    where, config = cls.__name__, getattr(cls, "config", None)
    if not isinstance(config, PhysicsConfig):
        raise TypeError(f"{where} has no configuration fragment: set the class attribute "
                        "'config' to a fesens.physics.spec.PhysicsConfig")
    unknown = [key for key in config.material if key not in cls.parameters]
    if unknown:
        raise ValueError(f"{where}.config.material {unknown} are not parameters of "
                         f"{where} ({', '.join(cls.parameters)})")
    keywords = inspect.signature(cls).parameters
    unknown = [key for key in (*config.material, *(o.name for o in config.options))
               if key not in keywords]
    if unknown:
        raise ValueError(f"{where}.config: {unknown} are not keywords of {where}'s constructor")
    missing = [load.method for load in config.loads if not callable(getattr(cls, load.method,
                                                                            None))]
    if missing:
        raise ValueError(f"{where}.config.loads call {missing}, which {where} does not have")
    missing = [s.method for s in config.sections if not callable(getattr(cls, s.method, None))]
    if missing:
        raise ValueError(f"{where}.config.sections call {missing}, which {where} does not have")


class PhysicsRegistry:
    """Physics classes by name (:attr:`LinearModel.name`)."""

    def __init__(self, classes=()):
        self._classes: dict[str, type[LinearModel]] = {}
        for cls in classes:
            self.register(cls)

    def register(self, cls: type[LinearModel]) -> type[LinearModel]:
        """Add ``cls`` under ``cls.name`` (usable as a class decorator).

        Raises
        ------
        ValueError, TypeError
            A name taken already, or a declaration missing or inconsistent (see
            :func:`check_declarations`).
        """
        check_declarations(cls)
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

    @property
    def default(self) -> type[LinearModel]:
        """The physics of a config without ``physics.type``: the first registered."""
        return next(iter(self._classes.values()))

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
