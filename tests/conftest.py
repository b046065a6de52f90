"""The suite's shared set-up.

pytest puts the folder of this file on ``sys.path``, so the test folders import the helpers
kept here (``mpi_launch``: the one way the tests start ``mpirun``) whichever of them run.

``make test`` shares the test files among pytest-xdist workers (``-n auto --dist loadfile``):
each file runs on one worker, in order, so a module-scoped fixture is built once and tests
that go on from one another's state in it (the README's steps, run in order in one copy of
the project) keep their order. A test must not rely on another file's tests having run.
"""
