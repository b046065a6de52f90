"""A physics a user writes as a Python function: an energy or a weak form.

Two ways to state it, each a function over arrays of quadrature points in the traced numpy
subset (plain ``numpy`` calls), with ``g = ∇u`` ``(n_cells, n_qp, dim)``, ``u``
``(n_cells, n_qp)`` and the quadrature points ``x`` ``(n_cells, n_qp, dim)`` for a scalar
field; for a field of ``d`` components (``components=d``, or ``"dim"``: one per space
dimension) ``u`` is ``(n_cells, n_qp, d)``, ``g_ik = ∂u_i/∂x_k`` ``(n_cells, n_qp, d, dim)``
and every ``r0``, ``r1`` below has the component axis after the points:

* a stored energy density ``ψ(g, u, **params) -> (n_cells, n_qp)``
  (:func:`energy_physics`): the solution makes ``Π = ∫ ψ dΩ − (loads)`` stationary, so the
  residual is ``R_a = ∫ (∂ψ/∂u N_a + ∂ψ/∂g · ∇N_a) dΩ − f_a`` and the tangent holds the
  second derivatives of ``ψ`` (symmetric);
* a weak form ``r(u, g, x, **params) -> (r0, r1)`` (:func:`weak_form_physics`),
  ``r0`` ``(n_cells, n_qp)`` and ``r1`` ``(n_cells, n_qp, dim)``, tested against the shape
  functions, ``R_a = ∫ (r0 N_a + r1 · ∇N_a) dΩ − f_a``, for problems without an energy
  (advection–diffusion: ``r0 = b · g``, ``r1 = κ g``).

The parameters are the function's keyword arguments after the field arguments, each with
its default value: they become the model's parameters (a number or one value per cell
``(n_cells,)``; inside the function a per-cell value has the shape ``(n_cells, 1)``, which
broadcasts against the points), besides the density ``scale`` that multiplies the
integrand. fesens derives the rest with :mod:`fesens.ad`, vectorized over all cells and
points: the residual by one reverse pass (:func:`~fesens.ad.pointwise.pointwise_grad`) of
the energy, the tangent by its pointwise Hessian, or, for a weak form, by ``dim + 1``
forward-mode products of the integrand, one per entry of ``(u, g)``. Newton, the load
steps and the one-solve adjoint are those of every :class:`NonlinearModel`, so every
parameter kind is differentiable: the function's parameters, ``scale``, load magnitudes,
prescribed values and node coordinates.

>>> import numpy as np
>>> from fesens.physics.user_physics import energy_physics
>>> def psi(g, T, c=1.0):
...     return c * (np.sum(g * g, axis=-1) / 2 + np.sum(g * g, axis=-1) ** 2 / 4)
>>> Stiffening = energy_physics(psi, name="stiffening")
>>> Stiffening.parameter_names()
('c', 'scale')

A small-strain law ``ψ(ε; params)`` becomes a model by
:func:`~fesens.physics.user_physics_small_strain.small_strain_physics`.

A value of the wrong shape, or NaN or infinity, from the user's function raises one error
naming the physics, the first failing cell and quadrature point and the state there.
"""

from __future__ import annotations

import inspect
from abc import abstractmethod
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from fesens.ad.api import jvp
from fesens.ad.numpy_wrapper import getval, untake
from fesens.ad.pointwise import pointwise_grad, pointwise_hessian
from fesens.errors import NonFiniteError
from fesens.fem.integrals.kernels import gradient_form, transposed_tangent_action
from fesens.fem.model.nonlinear import NonlinearModel
from fesens.fem.model.parameters import SCALE, Parameter
from fesens.mesh.mesh import Mesh
from fesens.physics.spec import PhysicsConfig


class UserPhysics(NonlinearModel):
    """A field whose residual is ``R_(a,c) = ∫ t (r0_c N_a + r1_c · ∇N_a) dΩ − f_(a,c)``.

    A subclass supplies :meth:`integrand` (traced) and :meth:`integrand_tangent` (plain);
    :func:`energy_physics` and :func:`weak_form_physics` make the subclasses from a user's
    function. The unknowns are the packed ``z = (u, g)`` ``(n_cells, n_qp, n_comp,
    dim + 1)`` (``z[..., c, 0] = u_c``, ``z[..., c, 1:] = ∇u_c``), the integrand the packed
    ``r = (r0, r1)`` of the same shape, and its tangent ``∂r/∂z`` ``(n_cells, n_qp, n_comp,
    dim + 1, n_comp, dim + 1)``; the cell matrices are ``Σ_q t dΩ_q Bᵀ (∂r/∂z) B`` with
    ``B = (N, ∇N)`` on the cached pattern.

    Parameters
    ----------
    mesh : Mesh
    thickness : float
        Out-of-plane thickness (2D).
    quadrature_order : int, optional
        Quadrature order (default: the element's stiffness order).
    **values
        The function's parameters (default: its defaults), each a number or per cell.
    """

    field_name = "u"
    #: The user's function (ψ or r) and its parameters' default values.
    function: ClassVar[Callable]
    defaults: ClassVar[dict[str, float]] = {}
    #: The field's components: 1 (a scalar: the function sees ``u`` ``(n_cells, n_qp)``),
    #: a number ``d`` or ``"dim"`` (one per space dimension) for a vector field.
    components: ClassVar[int | str] = 1
    config = PhysicsConfig()

    def __init__(self, mesh: Mesh, *, thickness: float = 1.0,
                 quadrature_order: int | None = None, **values):
        n_comp = mesh.dim if self.components == "dim" else self.components
        super().__init__(mesh, n_comp, thickness=thickness, quadrature_order=quadrature_order)
        unknown = set(values) - set(self.defaults)
        if unknown:
            raise TypeError(f"{self.name}: unknown parameter(s) {sorted(unknown)}; the "
                            f"function takes {', '.join(self.defaults) or 'none'}")
        self.values = {k: np.asarray(self.checked(k, values.get(k, default)), dtype=float)
                       for k, default in self.defaults.items()}

    # ------------------------------------------------------------ the user's side
    @abstractmethod
    def integrand(self, z, x, fields):
        """The packed ``(r0, r1)`` ``(n_cells, n_qp, n_comp, dim + 1)`` at ``z = (u, g)``
        and the points ``x`` (traced numpy)."""

    @abstractmethod
    def integrand_tangent(self, z, x, fields) -> np.ndarray:
        """``∂r/∂z`` ``(n_cells, n_qp, n_comp, dim + 1, n_comp, dim + 1)`` (plain numpy)."""

    @classmethod
    def _vector(cls) -> bool:
        """Whether the user's function sees the component axis (a vector field)."""
        return cls.components != 1

    def _arguments(self, z) -> tuple:
        """The user's ``(u, g)`` of the packed ``z``: without the component axis for a
        scalar field."""
        return (z[..., 0], z[..., 1:]) if self._vector() else (z[..., 0, 0], z[..., 0, 1:])

    def _field_shape(self, z) -> tuple:
        """The shape of ``u`` (and ``r0``) the user's function sees."""
        return np.shape(z)[:3] if self._vector() else np.shape(z)[:2]

    def material_fields(self, scale=None, **parameters) -> dict:
        """The function's parameters, per cell ``(n_cells, 1)`` against the points (traced
        when given traced), and the density ``scale`` when given."""
        fields = {}
        for key, value in self.values.items():
            given = parameters.get(key)
            fields[key] = (value if given is None else self.checked(key, given))[:, None]
        if scale is not None:
            fields["scale"] = self.checked("scale", scale)[:, None]
        return fields

    def flux(self, u_q, grad_q, fields):
        """``r1`` ``(n_cells, n_qp, n_comp, dim)`` at the mesh's own quadrature points."""
        z = packed(u_q, grad_q)
        return self._scaled(self.integrand(z, self.geometry().x, fields), fields, 2)[..., 1:]

    def flux_tangent(self, u_q, grad_q, fields) -> tuple:
        """``(∂r1/∂g, ∂r1/∂u)`` at the mesh's own quadrature points (plain)."""
        J = self._scaled(self.integrand_tangent(packed(u_q, grad_q), self.geometry().x,
                                                fields), fields, 4)
        return J[:, :, :, 1:, :, 1:], J[:, :, :, 1:, :, 0]

    # ------------------------------------------------------------ residual and tangent
    def internal_forces(self, u, fields: dict, points=None):
        """``F_(a,c) = Σ_q t dΩ_q (r0_c N_a + r1_c · ∇N_a)`` over all dofs, ``(n_dofs,)``;
        traced in ``u``, the fields and ``points``."""
        geometry, u_q, grad_q = self._at_quadrature(u, points)
        r = self._scaled(self.integrand(packed(u_q, grad_q), geometry.x, fields), fields, 2)
        weighted = self._weights(geometry)[:, :, None, None] * r  # (e, q, c, 1 + dim)
        n_cells, n_qp, n_comp, width = np.shape(weighted)
        B = _shape_values(geometry)  # (n_geom, q, a, 1 + dim)
        n_geom, n_nodes = np.shape(B)[0], np.shape(B)[2]
        # Σ_(qK) (w r)_(e,c,qK) B_(qK,a): one matrix product (BLAS where cells share B)
        tested = np.reshape(np.swapaxes(B, 2, 3), (n_geom, n_qp * width, n_nodes))
        weighted = np.reshape(np.transpose(weighted, (0, 2, 1, 3)),
                              (n_cells, n_comp, n_qp * width))
        if n_geom == 1:
            cell_forces = np.reshape(np.reshape(weighted, (n_cells * n_comp, -1)) @ tested[0],
                                     (n_cells, n_comp, n_nodes))
        else:
            cell_forces = np.matmul(weighted, tested)
        forces = untake(np.reshape(np.swapaxes(cell_forces, 1, 2), (n_cells, -1)),
                        self.dofmap.cell_dofs, (self.dofmap.n_dofs,))
        return self._subtract_follower_forces(forces, u, fields, points)

    def tangent(self, u, fields: dict, points=None, block: str = "ff"):
        """``∂R/∂u`` at the state ``u`` ``(n_dofs,)`` on the cached pattern (plain)."""
        weights, B, J = self._tangent_at(u, fields, points)
        n_cells, n_qp = np.shape(J)[:2]
        K = gradient_form(np.broadcast_to(weights, (n_cells, n_qp)), B, J)
        nd = self.dofmap.cell_dofs.shape[1]
        K = np.reshape(K, (n_cells, nd, nd))  # a new array: the follower stiffness adds in place
        self._add_follower_stiffness(K, u, {k: getval(v) for k, v in fields.items()}, points)
        return self.operator(block).cell_matrix(K)

    def transposed_tangent(self, u, fields: dict, points=None):
        """``v ↦ (∂R/∂u)ᵀ v`` for cell vectors ``v`` ``(n_cells, n_nodes, n_comp)``
        (plain), with the follower loads' stiffness."""
        action = transposed_tangent_action(*self._tangent_at(u, fields, points))
        points = None if points is None else np.asarray(getval(points))
        return self._with_follower_stiffness(action, np.asarray(getval(u)),
                                             {k: getval(v) for k, v in fields.items()}, points)

    def _tangent_at(self, u, fields: dict, points) -> tuple:
        """``(t dΩ, B = (N, ∇N) (n_geom, n_qp, n_nodes, dim + 1), ∂r/∂z (n_cells, n_qp,
        n_comp, dim + 1, n_comp, dim + 1))`` at the state ``u`` (plain arrays)."""
        points = None if points is None else np.asarray(getval(points))
        plain = {k: np.asarray(getval(v)) for k, v in fields.items()}
        geometry, u_q, grad_q = self._at_quadrature(np.asarray(getval(u)), points)
        J = self._scaled(self.integrand_tangent(packed(u_q, grad_q), geometry.x, plain),
                         plain, 4)
        return self._weights(geometry), _shape_values(geometry), J

    @staticmethod
    def _scaled(value, fields: dict, extra_axes: int = 1):
        """``value`` ``(n_cells, n_qp, ...)`` times the density scale, when given."""
        scale = fields.get("scale")
        return value if scale is None else value * np.reshape(scale, (-1, 1) + (1,) * extra_axes)

    # ------------------------------------------------------------ checking the user's values
    def checked_value(self, value, expected: tuple, z, what: str):
        """``value`` after checking its shape is ``expected`` and it is finite, naming the
        physics, the first failing cell and quadrature point and ``z = (u, ∇u)`` there."""
        raw = np.asarray(getval(value))
        if raw.shape != expected:
            raise ValueError(f"physics {self.name!r}: {what} returned shape {raw.shape}, "
                             f"expected {expected} (cells, quadrature points, ...)")
        bad = ~np.isfinite(raw)
        if bad.any():
            cell, point = np.unravel_index(np.flatnonzero(bad.reshape(-1))[0], raw.shape)[:2]
            u, g = self._arguments(np.asarray(getval(z))[cell, point][None, None])
            text = {"precision": 6, "max_line_width": 1000}
            value_text = np.array2string(raw[cell, point], **text).replace("\n", "")
            u_text = (f"{u.item():.6g}" if u.size == 1 and not self._vector()
                      else np.array2string(u[0, 0], **text))
            raise NonFiniteError(
                f"physics {self.name!r}: {what} is not finite at cell {cell}, quadrature "
                f"point {point}: {value_text} at u = {u_text}, grad u = "
                f"{np.array2string(g[0, 0], **text).replace(chr(10), '')}; the function is "
                "not defined or not differentiable there")
        return value


class EnergyPhysics(UserPhysics):
    """A field from a stored energy density ``ψ(g, u, **params)`` (see the module):
    ``r = ∂ψ/∂z`` and ``∂r/∂z = ∂²ψ/∂z²``, symmetric."""

    symmetric_tangent = True
    definite_tangent = False

    def _density(self, z, values: dict):
        """The user's ``ψ`` ``(n_cells, n_qp)`` at the packed ``z`` (traced)."""
        u, g = self._arguments(z)
        return type(self).function(g, u, **values)

    def _packed_energy(self, z, *values):
        with np.errstate(all="ignore"):  # a non-finite value is refused below, named
            psi = self._density(z, dict(zip(self.values, values, strict=True)))
        return self.checked_value(psi, np.shape(z)[:2], z, "the energy psi")

    def _values(self, fields: dict) -> tuple:
        return tuple(fields[k] for k in self.values)

    def integrand(self, z, x, fields):
        """``∂ψ/∂(u, g)`` ``(n_cells, n_qp, n_comp, dim + 1)`` by one reverse pass
        (traced)."""
        with np.errstate(all="ignore"):
            r = pointwise_grad(self._packed_energy, z, *self._values(fields))
        return self.checked_value(r, np.shape(z), z, "the derivative of psi")

    def integrand_tangent(self, z, x, fields) -> np.ndarray:
        """``∂²ψ/∂(u, g)²`` ``(n_cells, n_qp, n_comp, dim + 1, n_comp, dim + 1)``
        (plain)."""
        with np.errstate(all="ignore"):
            J = pointwise_hessian(self._packed_energy, z, *self._values(fields), event_ndim=2)
        return self.checked_value(J, (*np.shape(z), *np.shape(z)[2:]), z,
                                  "the second derivative of psi")

    def energy(self, u_q, grad_q, fields):
        """``s ψ`` ``(n_cells, n_qp)`` (traced)."""
        W = self._packed_energy(packed(u_q, grad_q), *self._values(fields))
        return self._scaled(W, fields, 0)


class WeakFormPhysics(UserPhysics):
    """A field from a weak form ``r(u, g, x, **params) -> (r0, r1)`` (see the module): the
    tangent ``∂r/∂z`` by ``n_comp (dim + 1)`` forward-mode products of ``r``."""

    symmetric_tangent = False

    def integrand(self, z, x, fields):
        """The packed ``(r0, r1)`` ``(n_cells, n_qp, n_comp, dim + 1)`` (traced)."""
        with np.errstate(all="ignore"):  # a non-finite value is refused below, named
            r0, r1 = type(self).function(*self._arguments(z), x,
                                         **{k: fields[k] for k in self.values})
        shape = self._field_shape(z)
        r0 = self.checked_value(r0, shape, z, "the weak form's r0")
        r1 = self.checked_value(r1, (*shape, np.shape(z)[-1] - 1), z, "the weak form's r1")
        r = np.concatenate([r0[..., None], r1], axis=-1)
        return r if self._vector() else r[:, :, None, :]

    def integrand_tangent(self, z, x, fields) -> np.ndarray:
        """``∂r/∂z`` ``(n_cells, n_qp, n_comp, dim + 1, n_comp, dim + 1)``: column ``(c,
        k)`` is the product of the integrand's derivative with the unit direction ``e_ck``
        at every point (plain)."""
        z = np.asarray(getval(z), dtype=float)
        x = np.asarray(getval(x))
        J = np.empty((*z.shape, *z.shape[2:]))
        direction = np.zeros(z.shape)
        for c, k in np.ndindex(*z.shape[2:]):
            direction[..., c, k] = 1.0
            with np.errstate(all="ignore"):
                J[..., c, k] = getval(jvp(lambda zz: self.integrand(zz, x, fields), (z,),
                                          (direction,))[1])
            direction[..., c, k] = 0.0
        return self.checked_value(J, J.shape, z, "the derivative of the weak form")


def energy_physics(psi: Callable, *, name: str | None = None,
                   components: int | str = 1) -> type[EnergyPhysics]:
    """A physics class from an energy density ``ψ(g, u, **params) -> (n_cells, n_qp)``.

    Parameters
    ----------
    psi : callable
        ``g`` ``(n_cells, n_qp, dim)``, ``u`` ``(n_cells, n_qp)`` (a vector field:
        ``(n_cells, n_qp, d, dim)`` and ``(n_cells, n_qp, d)``), then its parameters as
        keywords with defaults (numbers); traced numpy, twice differentiable.
    name : str, optional
        The physics' name in messages (default: the function's).
    components : int or "dim"
        The field's components: 1 (a scalar, default), ``d``, or ``"dim"`` (one per space
        dimension, e.g. a displacement).

    Returns
    -------
    type
        An :class:`EnergyPhysics` subclass: ``Physics(mesh, **values)``.
    """
    return user_physics_class(EnergyPhysics, psi, name, 2, components)


def weak_form_physics(r: Callable, *, name: str | None = None,
                      components: int | str = 1) -> type[WeakFormPhysics]:
    """A physics class from a weak form ``r(u, g, x, **params) -> (r0, r1)``.

    Parameters
    ----------
    r : callable
        ``u`` ``(n_cells, n_qp)``, ``g`` ``(n_cells, n_qp, dim)``, ``x`` ``(n_cells, n_qp,
        dim)``, then its parameters as keywords with defaults; returns ``r0``
        ``(n_cells, n_qp)`` (tested against ``N``) and ``r1`` ``(n_cells, n_qp, dim)``
        (tested against ``∇N``); a vector field has the component axis after the points
        (``u``, ``r0`` ``(n_cells, n_qp, d)``; ``g``, ``r1`` ``(n_cells, n_qp, d, dim)``);
        traced numpy, differentiable.
    name : str, optional
        The physics' name in messages (default: the function's).
    components : int or "dim"
        As for :func:`energy_physics`.

    Returns
    -------
    type
        A :class:`WeakFormPhysics` subclass (non-symmetric tangent: LU).
    """
    return user_physics_class(WeakFormPhysics, r, name, 3, components)


def user_physics_class(base: type[UserPhysics], function: Callable, name: str | None,
                   n_fields: int, components: int | str) -> type[UserPhysics]:
    """The subclass of ``base`` for ``function``, whose arguments after the first
    ``n_fields`` are its parameters, each with a numeric default."""
    if not callable(function):
        raise TypeError(f"{base.__name__} needs a function, got {function!r}")
    name = name or getattr(function, "__name__", "user_physics")
    if components != "dim" and not (isinstance(components, int) and components >= 1):
        raise ValueError(f"physics {name!r}: components must be a positive integer or "
                         f"'dim', got {components!r}")
    arguments = list(inspect.signature(function).parameters.values())
    if len(arguments) < n_fields:
        raise TypeError(f"physics {name!r}: the function takes the fields first ("
                        f"{n_fields} arguments), then its parameters with defaults")
    defaults = {}
    for argument in arguments[n_fields:]:
        if not isinstance(argument.default, int | float) or isinstance(argument.default, bool):
            raise TypeError(f"physics {name!r}: parameter {argument.name!r} needs a number "
                            f"as its default value (e.g. {argument.name}=1.0)")
        defaults[argument.name] = float(argument.default)
    if "scale" in defaults:
        raise ValueError(f"physics {name!r}: 'scale' is the density every physics takes; "
                         "name the parameter otherwise")
    parameters = {k: Parameter(k, f"parameter {k} of {name}") for k in defaults}
    return type(f"{base.__name__}[{name}]", (base,), {
        "name": name, "function": staticmethod(function), "defaults": defaults,
        "components": components, "parameters": {**parameters, "scale": SCALE},
        "__module__": base.__module__})


def packed(u_q, grad_q):
    """``z = (u, g)`` ``(n_cells, n_qp, n_comp, dim + 1)`` of ``u_q`` ``(n_cells, n_qp,
    n_comp)`` and ``grad_q`` ``(n_cells, n_qp, n_comp, dim)``."""
    return np.concatenate([u_q[..., None], grad_q], axis=-1)


def _shape_values(geometry) -> np.ndarray:
    """``B = (N, ∇N)`` ``(n_geom, n_qp, n_nodes, dim + 1)``."""
    dNdx = geometry.dNdx
    N = np.broadcast_to(geometry.N[None, :, :, None], (*np.shape(dNdx)[:3], 1))
    return np.concatenate([N, dNdx], axis=-1)
