"""Everything about splitting a run among MPI ranks: which rank holds which cells
(:mod:`~fesens.fem.partition.cells`, with PETSc's partitioners in
:mod:`~fesens.fem.partition.petsc`), one rank's part of the mesh
(:mod:`~fesens.fem.partition.mesh_part`) and of the model
(:mod:`~fesens.fem.partition.model_part`)."""
