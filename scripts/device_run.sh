#!/usr/bin/env bash
# The GPU run on the lent H200, as one `run` call (the second of ../shared/device/README.md's two):
# installs MLX's CUDA build, runs the GPU tests and `autoperfect.gpu_bench` on configs/h200.yaml,
# and leaves the results in $OUT (h200.tar.gz holds results/h200; the logs beside it).
#   run carry [".whlB", ".whl-install.sh"], command: bash scripts/device_run.sh [gpu_bench args...]
set -uo pipefail
bash .whl-install.sh || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.csv"
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_cuda.py -k "gpu_kernel" 2>&1 \
  | tee "$OUT/pytest.log" | tail -15
timeout 420 python3 -m autoperfect.gpu_bench configs/h200.yaml results/h200 "$@" 2>&1 | tee "$OUT/run.log"
tar czf "$OUT/h200.tar.gz" results/h200
