"""Global sparse operators from per-cell ones: the dof numbering, the cached-pattern
:class:`~fesens.fem.assembly.assembler.Assembler` and the assembly as differentiable
primitives (:mod:`fesens.fem.assembly.primitives`)."""
