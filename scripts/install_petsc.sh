#!/usr/bin/env bash
# Optional PETSc backends (`petsc`, `petsc_direct`): Debian's PETSc and petsc4py built
# against it in ./.venv. Idempotent; `make petsc` runs it (after `make setup`).
#
# 1. petsc-dev (Debian: PETSc with OpenMPI, hypre and MUMPS; about 115 packages, 80 MB of
#    downloads, 16 s to install from the apt cache) unless installed or PETSC_DIR names
#    another PETSc (built with PETSC_ARCH empty); needs root or passwordless sudo.
# 2. mpi4py (pip's wheel loads the system's MPI library at run time).
# 3. petsc4py of PETSc's own version (it must match major.minor), compiled against it:
#    about 3 minutes on one core, then kept in pip's wheel cache. petsc4py 3.18's sdist
#    ships its Cython-generated C (it compiles against numpy 2's headers) but its link step
#    breaks on setuptools >= 70 (a list-valued rpath option): built with setuptools < 70.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PY="$VENV/bin/python"

if [ ! -x "$PY" ]; then
    echo "install_petsc: $PY is missing; run 'make setup' first" >&2
    exit 1
fi
# mpi4py (the reductions of distributed runs): its wheel finds the system's Open MPI
"$PY" -c "import mpi4py" 2>/dev/null || "$PY" -m pip install -q "mpi4py>=4"
if "$PY" -c "import petsc4py" 2>/dev/null; then
    exit 0
fi

if [ -z "${PETSC_DIR:-}" ] && ! dpkg -s petsc-dev >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    fi
    if ! command -v apt-get >/dev/null 2>&1 || { [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; }; then
        echo "install_petsc: PETSc is missing and cannot be installed here (needs apt-get and" \
             "root or sudo). Install it (Debian/Ubuntu: apt-get install petsc-dev), or set" \
             "PETSC_DIR to a PETSc build (PETSC_ARCH empty) and run make petsc again" >&2
        exit 1
    fi
    echo "install_petsc: installing petsc-dev (apt-get)"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq petsc-dev >/dev/null
fi

PETSC_DIR=${PETSC_DIR:-/usr/lib/petscdir/petsc-real}
PETSC_DIR=$(readlink -f "$PETSC_DIR")
version=$(awk '/#define PETSC_VERSION_(MAJOR|MINOR|SUBMINOR) / {printf "%s%s", sep, $3; sep="."}' \
    "$PETSC_DIR/include/petscversion.h")
echo "install_petsc: building petsc4py $version against $PETSC_DIR"
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
echo "setuptools<70" >"$constraints"
if "$PY" -m pip install --help | grep -q -- --build-constraint; then
    build_constraint=(--build-constraint "$constraints")
else  # pip < 25.3: its build environments read PIP_CONSTRAINT
    build_constraint=()
    export PIP_CONSTRAINT="$constraints"
fi
PETSC_DIR="$PETSC_DIR" PETSC_ARCH="" \
    NUMPY_INCLUDE=$("$PY" -c "import numpy; print(numpy.get_include())") \
    "$PY" -m pip install -q --no-deps "${build_constraint[@]}" "petsc4py==$version" \
    2>&1 | grep -v "is ignored: it is neither" || true
"$PY" -c "import petsc4py" || {
    echo "install_petsc: petsc4py $version did not install (see pip's output above)" >&2
    exit 1
}
