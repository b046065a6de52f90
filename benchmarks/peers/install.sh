#!/usr/bin/env bash
# The peer codes of benchmarks/bench_nonlinear_peers.py, torch-fem and jax-fem, in their own
# virtual environment ./.peers (or $PEERS_VENV), apart from fesens's .venv so that fesens's
# dependencies stay as pyproject.toml says. Idempotent; `make peers` runs it. CPU only.
#
# 1. PyTorch's CPU build first: torch-fem's bare torch requirement would otherwise take a CUDA
#    build of several GB (as in scripts/setup.sh).
# 2. torch-fem, and jax-fem with what its modules import but its package does not declare:
#    JAX (CPU), fenics-basix, gmsh, meshio, pyfiglet. jax-fem 0.0.12 is not on the package
#    index this was set up from; 0.0.11 is pinned.
# 3. petsc4py: jax-fem's solver module imports it even when the linear solves go through
#    scipy. Debian's PETSc and petsc4py built against it, by fesens's scripts/install_petsc.sh
#    (needs apt-get and root or sudo, or PETSC_DIR; about 3 minutes to compile once).
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON=${PYTHON:-python3}
PEERS_VENV=${PEERS_VENV:-.peers}
PY="$PEERS_VENV/bin/python"

[ -x "$PY" ] || "$PYTHON" -m venv "$PEERS_VENV"
pip_install() {  # pip's notes about index folders that are absent here are noise
    "$PY" -m pip install -q "$@" 2>&1 | grep -v "is ignored: it is neither" || true
}
pip_install --upgrade pip
"$PY" -c "import torch" 2>/dev/null || pip_install "torch==2.13.0"
pip_install "torch-fem==0.14.0" "jax[cpu]==0.10.2" "jax-fem==0.0.11" fenics-basix gmsh meshio \
    pyfiglet
VENV="$PEERS_VENV" bash scripts/install_petsc.sh

"$PY" -c "import torchfem, jax_fem.solver" >/dev/null
echo "peers: torch-fem and jax-fem ready in $PEERS_VENV (run benchmarks/bench_nonlinear_peers.py)"
