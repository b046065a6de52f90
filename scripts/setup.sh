#!/usr/bin/env bash
# Idempotent set-up of a fesens environment in ./.venv (or $VENV), at one of two levels:
#
#   scripts/setup.sh core   what `make demo` needs: fesens and CHOLMOD
#   scripts/setup.sh all    what `make test` needs: every extra (AMG, Gmsh, studies, Dask,
#                           JAX, PyTorch's CPU build, the STL export, numba) and the test tools
#                           (the default)
#
# 1. System libraries (Debian/Ubuntu, when root or sudo is available):
#    SuiteSparse (CHOLMOD, UMFPACK) and OpenBLAS (SuiteSparse otherwise runs on the
#    reference BLAS, about 3x slower).
# 2. A virtual environment with fesens (and, at level all, its extras).
# 3. scikit-sparse built against the installed SuiteSparse: 0.4.16 for SuiteSparse 5.x,
#    the current release for SuiteSparse 7.x. If that fails, fesens still runs on SuperLU.
#
# Each level leaves a stamp in the environment; a stamp newer than pyproject.toml and this
# script means that level (and, for all, the core under it) is done.
set -euo pipefail
cd "$(dirname "$0")/.."

level=${1:-all}
case "$level" in
    core|all) ;;
    *) echo "setup: unknown level '$level' (core or all)" >&2; exit 2 ;;
esac
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

done_at() {  # done_at LEVEL: that level's stamp is newer than what it was made from
    local stamp="$VENV/.fesens-setup-$1"
    [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ] && [ "$stamp" -nt scripts/setup.sh ]
}
if done_at all || { [ "$level" = core ] && done_at core; }; then
    exit 0
fi

have_pkg() { dpkg -s "$1" >/dev/null 2>&1; }

if command -v apt-get >/dev/null 2>&1; then
    missing=()
    for pkg in libsuitesparse-dev libopenblas-dev; do
        have_pkg "$pkg" || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        SUDO=""
        if [ "$(id -u)" -ne 0 ]; then
            if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; fi
        fi
        if [ "$(id -u)" -eq 0 ] || [ -n "$SUDO" ]; then
            echo "setup: installing ${missing[*]} (apt-get)"
            $SUDO apt-get update -qq
            DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
        else
            echo "setup: cannot install ${missing[*]} without root; fesens will use SuperLU" >&2
        fi
    fi
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PIP="$VENV/bin/python -m pip"
pip_install() {  # pip's notes about index folders that are absent here are noise
    $PIP install -q "$@" 2>&1 | grep -v "is ignored: it is neither" || true
}
$PIP install -q --upgrade pip 2>/dev/null
if [ "$level" = all ]; then
    # PyTorch's CPU build first: the bare torch>=2.0 of the [torch] extra would otherwise
    # take a CUDA build of several GB; once installed it satisfies the extra.
    "$VENV/bin/python" -c "import torch" 2>/dev/null || pip_install "torch==2.13.0"
    pip_install -e ".[all]"
else
    pip_install -e .
fi

if ! "$VENV/bin/python" -c "import sksparse.cholmod" 2>/dev/null; then
    ss_version=""
    if [ -f /usr/include/suitesparse/SuiteSparse_config.h ]; then
        ss_version=$(awk '/#define SUITESPARSE_MAIN_VERSION/ {print $3}' \
            /usr/include/suitesparse/SuiteSparse_config.h)
    fi
    case "$ss_version" in
        5|6) spec="scikit-sparse==0.4.16" ;;
        "") spec="" ;;
        *) spec="scikit-sparse" ;;
    esac
    if [ -n "$spec" ]; then
        echo "setup: building $spec against SuiteSparse $ss_version"
        pip_install "$spec"
    fi
    "$VENV/bin/python" -c "import sksparse.cholmod" 2>/dev/null ||
        echo "setup: CHOLMOD unavailable; fesens will fall back to SuperLU" >&2
fi
touch "$VENV/.fesens-setup-$level"
