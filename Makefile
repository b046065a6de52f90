# The two commands a new user needs:
#   make demo   set up fesens and CHOLMOD, then run the main job: optimize the MBB beam
#               (results in results/mbb)
#   make test   set up fesens with every extra, then run the test suite on every core
# Optional: make petsc  Debian's PETSc and petsc4py built against it (the petsc backends)
#           make peers  torch-fem and jax-fem in ./.peers (benchmarks/bench_nonlinear_peers.py)
VENV ?= .venv
PY := $(VENV)/bin/python
# pytest-xdist workers of `make test`; `make test WORKERS=0` runs the suite in this process
WORKERS ?= auto
export VENV

.PHONY: setup setup-core petsc demo test bench lint clean

setup:
	@bash scripts/setup.sh all

setup-core:
	@bash scripts/setup.sh core

petsc: setup-core
	@bash scripts/install_petsc.sh

# The peers of the finite-strain benchmark in their own environment, not fesens's .venv
.PHONY: peers
peers:
	@bash benchmarks/peers/install.sh

demo: setup-core
	$(VENV)/bin/fesens optimize --preset mbb --out results/mbb --force

# loadfile: the tests of one file run in order on one worker (tests/conftest.py). A worker
# that dies is reported as a failure, not replaced: xdist hangs rescheduling its file's rest.
# `make test` leaves out the tests marked slow (whole convergence runs, 3D and 2-rank
# reproductions, kill-and-resume trials: each tens of seconds); `make test-slow` runs them,
# and CI runs both
test: setup
	$(PY) -m pytest -q -n $(WORKERS) --dist loadfile --max-worker-restart 0 -m "not slow"

.PHONY: test-slow
test-slow: setup
	$(PY) -m pytest -q -n $(WORKERS) --dist loadfile --max-worker-restart 0 -m slow

bench: setup
	$(PY) benchmarks/bench_fem.py

# Reruns the full examples and commands whose numbers README.md and fesens/docs quote, and
# compares them with the text (tests/test_docs_numbers.py; the suite runs its fast part)
.PHONY: docs-check
docs-check: setup
	FESENS_DOCS_CHECK=1 $(PY) -m pytest -q -n $(WORKERS) --dist load tests/test_docs_numbers.py

# Every combination of what a config can choose, each refused at check time or run and
# checked (tests/combinations, fesens/docs/combinations.md): its shards on $(WORKERS)
# workers, each shard's tally printed (-rP); far more than a day of one core. `make test` samples it
.PHONY: combinations
combinations: setup
	FESENS_COMBINATIONS=all $(PY) -m pytest -q -n $(WORKERS) --dist load -rP \
		tests/combinations/test_combinations.py -k test_every_combination

lint: setup
	$(VENV)/bin/ruff check .

clean:
	rm -rf results .pytest_cache
