"""A physics' configuration fragment: what a config file may say about it, as plain data.

Each physics declares one :class:`PhysicsConfig` as its class attribute ``config``. Config
validation (:mod:`fesens.config.schema`), model building (:mod:`fesens.config.build`), the
``solve``/``sensitivity`` workflow, studies and the command line read the fragments through
the registry (:mod:`fesens.physics.registry`); none of them names a physics.

How the config maps to the model (``cls`` the physics class)::

    [physics] type = cls.name; other keys      cls(mesh, **options, **material)
    [material] keys = config.material          parameter names and constructor keywords;
                                               range and doc from cls.parameters[key],
                                               default from the constructor's signature
    [[supports]]                               model.fix(where, components, value)
    [[loads]] type = LoadKind.type             model.<LoadKind.method>(...) (see LoadKind)
    [section] or [[section]]                   model.<Section.method>(...) (see Section)
    [objective] type = a key of responses      a generic objective (a static kind)
    [objective] type = a key of eigen_responses  an eigen objective (an eigen kind), maximized;
    [material] <mass> (e.g. density)           the mass density of its eigen solve

``fesens sensitivity --wrt`` offers ``density``, the per-cell parameters of
``cls.parameters`` (besides ``scale``) and ``loads``; the model keeps each parameter's value
under the attribute of its name (``model.E``, ``model.conductivity``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

#: Where the selection of a load kind lives, which decides how its model method is called:
#: ``nodes``: ``method(at, value, name=)`` with ``at`` a point's coordinates or node ids;
#: ``facets``: ``method(facets, value, name=)``; ``cells``: ``method(value, cells=, name=)``.
LOAD_SUPPORTS = ("nodes", "facets", "cells")

#: What a :class:`Section` table selects: boundary facets (``group``, ``region``), or nodes
#: (``group``, ``region``, ``point``, as ``[[supports]]``); None: nothing.
SECTION_SELECTIONS = ("facets", "nodes", None)

#: What a :class:`SectionKey` takes: ``number``; ``numbers``: a number or a list of numbers
#: (one per component); ``components``: a list of components (0, 1, 2 or "x", "y", "z").
SECTION_VALUES = ("number", "numbers", "components")

#: How a reported number is taken from an output field: ``max``, ``min``, or ``max_norm``
#: (the largest Euclidean norm of the rows of a vector field).
REDUCTIONS = ("max", "min", "max_norm")


@dataclass(frozen=True)
class Option:
    """A key of the ``[physics]`` table: a keyword argument of the physics' constructor.

    Attributes
    ----------
    name : str
        The key and the constructor keyword.
    doc : str
        One line for messages and documentation.
    default : float or str
        Filled in when the key is absent.
    choices : tuple of str
        The value is one of these strings; empty: a number.
    lower : float or None
        A number's exclusive lower bound (None: any number).
    dims : tuple of int
        Mesh dimensions where the key applies (elsewhere it is rejected with a hint).
    extends : callable or None
        ``extends(value)`` accepts a string outside ``choices`` or raises ``ValueError``
        saying why not (a material law of an installed package); None: ``choices`` only.
    """

    name: str
    doc: str
    default: float | str
    choices: tuple[str, ...] = ()
    lower: float | None = 0.0
    dims: tuple[int, ...] = (2, 3)
    extends: Callable[[str], None] | None = None


@dataclass(frozen=True)
class LoadKind:
    """A ``[[loads]]`` type: the model method it calls and the shape of its value.

    Attributes
    ----------
    type : str
        The config's ``type`` name.
    method : str
        Name of the model method that adds the load (called as :data:`LOAD_SUPPORTS` says).
    on : {"nodes", "facets", "cells"}
        What the load's selection (``group``, ``region``, ``point``) selects.
    vector : bool
        True: the value is a vector of ``dim`` numbers; False: one number.
    doc : str
        What the value is (for messages).
    flags : tuple of (str, str)
        Boolean keys of the load's table, ``(key, what it does)``, each passed to the
        method as a keyword (default False), e.g. a pressure's ``follower``.
    unsymmetric : tuple of str
        The flags that, set, make the model's tangent unsymmetric (a follower pressure's
        load stiffness), so that a config check refuses a backend for symmetric matrices.
    """

    type: str
    method: str
    on: str
    vector: bool
    doc: str
    flags: tuple[tuple[str, str], ...] = ()
    unsymmetric: tuple[str, ...] = ()

    def __post_init__(self):
        if self.on not in LOAD_SUPPORTS:
            raise ValueError(f"load kind {self.type!r}: on={self.on!r}; expected one of "
                             f"{', '.join(LOAD_SUPPORTS)}")
        unknown = set(self.unsymmetric) - {key for key, _ in self.flags}
        if unknown:
            raise ValueError(f"load kind {self.type!r}: unsymmetric={sorted(unknown)} are not "
                             "among its flags")


@dataclass(frozen=True)
class Plot:
    """The picture ``fesens solve`` draws of a 2D solution.

    Attributes
    ----------
    field : str
        A scalar field of the solution's ``point_data()`` (drawn smoothly between the
        nodes) or of its ``cell_data()`` (one color per cell).
    title, label : str
        Title (after the config name) and colour-bar label.
    deformed : bool
        Draw the mesh moved by the nodal field (a displacement).
    clip_percentile : float
        Upper end of the colour scale as a percentile of the values (100: the maximum).
    """

    field: str
    title: str
    label: str
    deformed: bool = False
    clip_percentile: float = 100.0


@dataclass(frozen=True)
class Reported:
    """A number ``fesens solve`` reports in ``solution.json`` and on its summary line.

    Attributes
    ----------
    key : str
        Its key in ``solution.json`` (e.g. ``max_von_mises``).
    field : str
        A field of the solution's ``cell_data()`` or ``point_data()``.
    reduce : {"max", "min", "max_norm"}
    label : str
        Its name on the summary line.
    """

    key: str
    field: str
    reduce: str
    label: str

    def __post_init__(self):
        if self.reduce not in REDUCTIONS:
            raise ValueError(f"reported {self.key!r}: reduce={self.reduce!r}; expected one "
                             f"of {', '.join(REDUCTIONS)}")


@dataclass(frozen=True)
class SectionKey:
    """A key of a :class:`Section` table.

    Attributes
    ----------
    name : str
        The key and the model method's keyword.
    doc : str
        One line for messages and documentation.
    lower : float or None
        Lower bound of the number (None: any number).
    file : bool
        A string is accepted too: the path of a file (relative to the config file), passed
        to the method as an absolute path.
    default : float or None
        Filled in when the key is absent (None: the key is required, unless ``optional``).
    value : {"number", "numbers", "components"}
        What the key takes (:data:`SECTION_VALUES`; ``lower`` bounds every number).
    optional : bool
        The key may be absent; the method then gets None (its own default).
    lower_open : bool
        ``lower`` itself is excluded (e.g. a stiffness ``> 0``).
    """

    name: str
    doc: str
    lower: float | None = None
    file: bool = False
    default: float | None = None
    value: str = "number"
    optional: bool = False
    lower_open: bool = False

    def __post_init__(self):
        if self.value not in SECTION_VALUES:
            raise ValueError(f"section key {self.name!r}: value={self.value!r}; expected one "
                             f"of {', '.join(SECTION_VALUES)}")


@dataclass(frozen=True)
class Section:
    """A config section of one physics besides the loads: ``[name]`` (one table) or
    ``[[name]]`` (``many``: a list of tables), each table calling ``model.<method>``.

    Attributes
    ----------
    name : str
        The top-level key (e.g. ``convection``).
    method : str
        The model method; called ``method(selection, **keys, name=)`` when ``on`` is
        ``"facets"`` (the table selects facets by ``group`` or ``region``),
        ``method(selection, **keys)`` when it is ``"nodes"`` (``group``, ``region`` or
        ``point``, as a support), else ``method(**keys)``.
    keys : tuple of SectionKey
    many : bool
    on : {"facets", "nodes", None}
    doc : str
        What the section is (for messages).
    anchors : str or None
        A key whose value > 0 makes the table's term remove the null space of the stiffness,
        as a support does (a Robin condition ``h (u − u∞)`` on a non-empty set of facets:
        ``K + H`` is positive definite), so that the model needs no support; None: the
        section leaves the null space as it is.
    loads : bool
        Its term loads the model (a convection's ``h T∞``, a thermal strain), so that a
        config with such a table needs no ``[[loads]]``; False: it adds stiffness only (springs).
    stiffness : bool
        Its term adds to the stiffness matrix besides the cells' own matrices (springs on
        the diagonal, a convection's boundary matrix ``h ∫ N Nᵀ``), so that a config check
        refuses a solver that applies the cells' matrices only (the matrix-free multigrid).
    diagonal : bool
        Its stiffness term is a constant diagonal on the selected nodes' dofs (springs to
        the ground), which a solver that declares ``ModelNeeds.diagonal`` adds itself.
    """

    name: str
    method: str
    keys: tuple[SectionKey, ...]
    many: bool = False
    on: str | None = None
    doc: str = ""
    anchors: str | None = None
    loads: bool = True
    stiffness: bool = False
    diagonal: bool = False

    def __post_init__(self):
        if self.on not in SECTION_SELECTIONS:
            raise ValueError(f"section {self.name!r}: on={self.on!r}; expected one of "
                             f"{', '.join(map(str, SECTION_SELECTIONS))}")
        if self.anchors is not None and self.anchors not in [key.name for key in self.keys]:
            raise ValueError(f"section {self.name!r}: anchors={self.anchors!r} is not one of "
                             "its keys")


@dataclass(frozen=True)
class PhysicsConfig:
    """Everything the config sections offer for one physics.

    Attributes
    ----------
    options : tuple of Option
        ``[physics]`` keys besides ``type``.
    material : tuple of str
        ``[material]`` keys: names of the physics' parameters, which are also constructor
        keywords (checked against the parameter's range, defaulting to the constructor's
        default).
    vector_field : bool
        The nodal field has one component per space dimension (supports then take
        ``components``, value objectives a ``component``); False: one scalar per node.
    loads : tuple of LoadKind
        The ``[[loads]]`` types.
    responses : mapping of str to str
        Objective (and study output) type names, in the order messages list them, each
        mapped to the name of a generic objective kind of a static solve (e.g.
        ``compliance``, ``value``: a record of :mod:`fesens.config.objectives`; ``volume``
        is offered for every physics). The config layer owns the records, because their
        keys are config checks, and checks these names when it reads the fragment.
    compliance_name : str
        What ``fesens solve`` calls ``fᵀu`` (e.g. "thermal compliance").
    plot : Plot or None
        The picture of a 2D solution (None: no picture).
    reported : tuple of Reported
        Numbers reported after a solve.
    sections : tuple of Section
        Further top-level sections of this physics (e.g. ``[[convection]]``).
    mass : str or None
        The ``[material]`` key of the mass density of an eigen solve (e.g. ``density``;
        not a constructor keyword: ``ρ₀`` of
        :meth:`~fesens.fem.analysis.modal.ModalAnalysis.modes`);
        None: the physics offers no eigen objectives.
    eigen_responses : mapping of str to str
        Objective type names of a frequency design (``fesens optimize`` only), each mapped
        to the name of an eigen objective kind (e.g. ``eigenvalue``, ``frequency``: a
        record of the eigen analysis in :mod:`fesens.config.objectives`, checked there as
        ``responses`` are), which ``fesens optimize`` maximizes; needs ``mass``.
    inertia : str or None
        The ``[material]`` key of the coefficient of the field's time derivative (heat
        conduction: the volumetric heat capacity ``ρ c``; elasticity: the mass density,
        which may be ``mass`` too); not a constructor keyword. None: the physics offers
        static analyses only.
    time_order : int
        The order of that time derivative: 1 (``M Ṫ + K T = f``: a transient analysis) or
        2 (``M ü + C u̇ + K u = f``: dynamic and harmonic analyses).
    material_of : callable or None
        ``material_of(options)`` of the checked ``[physics]`` options: the ``[material]``
        keys they choose instead of ``material``, a mapping of names to
        :class:`~fesens.fem.model.parameters.Parameter` (each required), e.g. a material
        law's constants; or None (then ``material``). None: ``material`` always.
    unsymmetric_material : tuple of str
        ``[material]`` keys whose non-zero value makes the tangent of a symmetric-tangent
        physics unsymmetric (e.g. Armstrong–Frederick's recovery of the back stress), so
        that the config refuses a backend for symmetric matrices before any work.
    """

    options: tuple[Option, ...] = ()
    material: tuple[str, ...] = ()
    vector_field: bool = False
    loads: tuple[LoadKind, ...] = ()
    responses: Mapping[str, str] = field(default_factory=dict)
    compliance_name: str = "compliance"
    plot: Plot | None = None
    reported: tuple[Reported, ...] = ()
    sections: tuple[Section, ...] = ()
    mass: str | None = None
    eigen_responses: Mapping[str, str] = field(default_factory=dict)
    inertia: str | None = None
    time_order: int = 1
    material_of: Callable[[Mapping], Mapping | None] | None = None
    unsymmetric_material: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "responses", MappingProxyType(dict(self.responses)))
        object.__setattr__(self, "eigen_responses",
                           MappingProxyType(dict(self.eigen_responses)))
        if self.eigen_responses and self.mass is None:
            raise ValueError("eigen_responses need the [material] key of the mass density: "
                             "give mass (e.g. \"density\")")
        if self.time_order not in (1, 2):
            raise ValueError(f"time_order must be 1 (first time derivative) or 2 (second), "
                             f"got {self.time_order!r}")
        types = [load.type for load in self.loads]
        if len(set(types)) != len(types):
            raise ValueError(f"load types must be unique, got {types}")

    def load_kind(self, type_name: str) -> LoadKind:
        """The load kind of a config ``type``.

        Raises
        ------
        KeyError
            Naming the load types of this fragment.
        """
        for load in self.loads:
            if load.type == type_name:
                return load
        raise KeyError(f"no load type {type_name!r}; this physics has "
                       f"{', '.join(load.type for load in self.loads)}")
