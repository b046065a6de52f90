"""Nonlinear solves ``R(u, θ) = 0``: Newton–Raphson with line search and load stepping
(:mod:`~fesens.fem.nonlinear.newton`), and the solve as one differentiable primitive whose
adjoint is one transposed solve with the converged tangent
(:mod:`~fesens.fem.nonlinear.implicit_solve`). The model that declares the residual is
:class:`~fesens.fem.model.nonlinear.NonlinearModel`.
"""
