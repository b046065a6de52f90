# The two commands a new user needs:
#   make demo   set up, then run the main job: optimize the MBB beam (results in results/mbb)
#   make test   set up, then run the test suite
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test bench lint clean

setup:
	@bash scripts/setup.sh

demo: setup
	$(VENV)/bin/fesens optimize --preset mbb --out results/mbb --force

test: setup
	$(PY) -m pytest -q

bench: setup
	$(PY) benchmarks/bench_fem.py

lint: setup
	$(VENV)/bin/ruff check .

clean:
	rm -rf results .pytest_cache
