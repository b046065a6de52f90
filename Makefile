# The two commands a new user needs:
#   make demo   set up, then run the main job: optimize the MBB beam (results in results/mbb)
#   make test   set up, then run the test suite
# Optional: make petsc  Debian's PETSc and petsc4py built against it (the petsc backends)
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup petsc demo test bench lint clean

setup:
	@bash scripts/setup.sh

petsc: setup
	@VENV=$(VENV) bash scripts/install_petsc.sh

demo: setup
	$(VENV)/bin/fesens optimize --preset mbb --out results/mbb --force

test: setup
	$(PY) -m pytest -q

bench: setup
	$(PY) benchmarks/bench_fem.py

# Reruns the full examples and commands whose numbers README.md and fesens/docs quote, and
# compares them with the text (tests/test_docs_numbers.py; the suite runs its fast part)
.PHONY: docs-check
docs-check: setup
	FESENS_DOCS_CHECK=1 $(PY) -m pytest -q tests/test_docs_numbers.py

lint: setup
	$(VENV)/bin/ruff check .

clean:
	rm -rf results .pytest_cache
