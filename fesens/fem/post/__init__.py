"""Post-processing of a solution: gradients and cell averages at the quadrature points, nodal
recovery, and fields at arbitrary points."""
