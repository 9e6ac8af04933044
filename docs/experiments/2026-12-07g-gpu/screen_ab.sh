#!/usr/bin/env bash
# The runtime's first-call screening (runtime.SCREEN, contenders.choose_variants' `screen`) on MLX's
# CUDA build: mx.value_and_grad of LayerNorm and softmax at 4096x1024 through autoperfect.jit
# (backward_gpu.py, fresh kernel caches: every variant compiled and gated), with screening off
# (SCREEN None, the pipeline's way) and on (2.0, the runtime's), alternating, ROUNDS times each, one
# process per run. On the device, after the wheel's install (docs/gpu-h200.md):
#   export PYTHONPATH=/tmp/site:$PWD; bash docs/experiments/2026-12-07g-gpu/screen_ab.sh
set -u
here=$(cd "$(dirname "$0")/../../.." && pwd)
for round in $(seq "${ROUNDS:-2}"); do
  for screen in None 2.0; do
    echo "== round $round, SCREEN=$screen"
    (cd "$here" && python3 -c "
import runpy, autoperfect.runtime as r
r.SCREEN = $screen
runpy.run_path('docs/experiments/2026-12-06m-cpu/backward_gpu.py', run_name='__main__')" 2>&1) \
      | grep -E "Device|first call|warm medians|largest" | sed -E "s/region 0.*//; s/\\(first call: /(/" | cut -c1-300
  done
done
