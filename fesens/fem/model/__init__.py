"""The model base class and its parts: :class:`~fesens.fem.model.linear.LinearModel` (the one
solve path), its declared parameters, Dirichlet conditions, load terms, solver choice,
matrix-free solves, and the :class:`~fesens.fem.model.solution.Solution` it returns."""
