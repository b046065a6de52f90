#!/usr/bin/env bash
# The GPU checks of the device multigrid, for a machine with an NVIDIA GPU and CuPy whose
# image has no fesens and no network: run from the repository root, results under $OUT.
#
#   bash benchmarks/device_check.sh            # about 4-6 minutes on an H100
#
# 1. fesens from this checkout by PYTHONPATH (no install, so no dependency resolution);
# 2. which of fesens's declared dependencies (pyproject.toml) and optional modules the image
#    lacks (imports.txt). The device path itself needs numpy and scipy only; a model (the
#    reference cell matrix of the tests and the benchmark) imports meshio at import time
#    for mesh files, so without meshio a stand-in package is put on the path;
# 3. the GPU tests (tests/solvers/test_device_gpu.py, run as a script: no pytest needed),
#    among them the cone filter on CuPy and fesens's optimize resident on the GPU;
# 4. benchmarks/bench_gpu.py with --library cupy, its own loop, at SIZES (default
#    160x80x80 and 320x160x160), each size in its own process with its own timeout;
# 5. 2D sizes (quad4) SIZES_2D (default 1200x600), the benchmark's loop and fesens's
#    optimize; fesens's optimize (resident on the GPU) at FESENS_SIZES (default 160x80x80,
#    a million hex8 cells, whose mesh and model are built on the host first).
# Each run's limit is cut to what is left of TOTAL_TIMEOUT (420 s); a run with less than
# 30 s left is skipped, and says so.
#
# Environment: OUT (default ./device_out), PYTHON (python3), SIZES, SIZES_2D, FESENS_SIZES,
# ITERATIONS (3), TEST_TIMEOUT (150 s), BENCH_TIMEOUT (small size 120 s, larger ones
# BIG_TIMEOUT 240 s), FESENS_TIMEOUT (180 s), TOTAL_TIMEOUT (420 s).
set -u
OUT=${OUT:-$PWD/device_out}
PYTHON=${PYTHON:-python3}
SIZES=${SIZES:-"160x80x80 320x160x160"}
ITERATIONS=${ITERATIONS:-3}
TEST_TIMEOUT=${TEST_TIMEOUT:-150}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-120}
BIG_TIMEOUT=${BIG_TIMEOUT:-240}
SIZES_2D=${SIZES_2D:-"1200x600"}
FESENS_SIZES=${FESENS_SIZES:-"160x80x80"}
FESENS_TIMEOUT=${FESENS_TIMEOUT:-180}
TOTAL_TIMEOUT=${TOTAL_TIMEOUT:-420}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1

{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
  "$PYTHON" --version
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

# --- 2. what the image lacks
"$PYTHON" - > "$OUT/imports.txt" 2>&1 <<'EOF'
import importlib, re, tomllib
with open("pyproject.toml", "rb") as handle:
    project = tomllib.load(handle)["project"]
# distribution name -> module name where they differ
modules = {"scikit-sparse": "sksparse", "cupy-cuda12x": "cupy", "cupy-cuda13x": "cupy",
           "array-api-strict": "array_api_strict", "tomli-w": "tomli_w"}
required = [re.split(r"[<>=!~\[ ;]", d)[0] for d in project["dependencies"]]
optional = ["cupy", "pytest", "array-api-strict", "scikit-sparse", "pyamg"]
for kind, names in (("required", required), ("optional", optional)):
    for name in names:
        module = modules.get(name, name.replace("-", "_"))
        try:
            found = importlib.import_module(module)
            print(f"{kind:9s} {name:18s} ok {getattr(found, '__version__', '')}")
        except Exception as error:
            print(f"{kind:9s} {name:18s} MISSING ({type(error).__name__}: {error})")
EOF
cat "$OUT/imports.txt"
if grep -q "meshio .*MISSING" "$OUT/imports.txt"; then
  STUB=$(mktemp -d)
  mkdir -p "$STUB/meshio"
  # the names fesens.mesh imports from meshio at import time; reading or writing mesh
  # files then fails, which nothing here does
  printf '"""A stand-in: meshio is not installed on this image."""\n' > "$STUB/meshio/__init__.py"
  printf 'reader_map = {}\n' > "$STUB/meshio/_helpers.py"
  printf 'meshio_to_vtk_order = {}\nmeshio_to_vtk_type = {}\n' > "$STUB/meshio/_vtk_common.py"
  export PYTHONPATH="$PYTHONPATH:$STUB"
  echo "meshio missing: a stand-in package at $STUB" | tee -a "$OUT/imports.txt"
fi
"$PYTHON" -c "import fesens.solvers.device_multigrid, fesens.physics; print('fesens imports: ok')" \
  2>&1 | tee -a "$OUT/imports.txt"

# --- 3. the GPU tests
echo "== tests/solvers/test_device_gpu.py"
timeout "$TEST_TIMEOUT" "$PYTHON" tests/solvers/test_device_gpu.py > "$OUT/gpu_tests.txt" 2>&1
echo "exit status $?" >> "$OUT/gpu_tests.txt"
cat "$OUT/gpu_tests.txt"

# one benchmark process: bench NAME LIMIT ARGS...; its limit cut to what is left in total
bench() {
  local name=$1 limit=$2 left
  shift 2
  left=$((TOTAL_TIMEOUT - SECONDS))
  if (( left < 30 )); then
    echo "== $name: skipped, ${left} s left of TOTAL_TIMEOUT=${TOTAL_TIMEOUT}" | tee "$OUT/$name.txt"
    return
  fi
  (( limit > left )) && limit=$left
  echo "== bench_gpu.py $name (limit $limit s)"
  timeout "$limit" "$PYTHON" benchmarks/bench_gpu.py --library cupy \
    --iterations "$ITERATIONS" --json "$OUT/$name.json" "$@" > "$OUT/$name.txt" 2>&1
  echo "exit status $?" >> "$OUT/$name.txt"
  grep -v '^{"' "$OUT/$name.txt"
}

# --- 4. the benchmark's own loop, one process per size
limit=$BENCH_TIMEOUT
for size in $SIZES; do
  bench "bench_gpu_$size" "$limit" --sizes "$size" --loops bench
  limit=$BIG_TIMEOUT
done

# --- 5. 2D sizes, and fesens's optimization loop resident on the GPU
for size in $SIZES_2D; do
  bench "bench_gpu_$size" "$BENCH_TIMEOUT" --sizes "$size" --loops bench fesens
done
for size in $FESENS_SIZES; do
  bench "fesens_loop_$size" "$FESENS_TIMEOUT" --sizes "$size" --loops fesens
done
echo "total ${SECONDS} s"
nvidia-smi --query-gpu=memory.used,memory.total --format=csv >> "$OUT/machine.txt" 2>&1
echo "results in $OUT"
