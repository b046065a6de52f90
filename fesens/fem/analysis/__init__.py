"""Analyses of a model beyond the static solve, traced like it: free vibration (modes) and
linear buckling."""
