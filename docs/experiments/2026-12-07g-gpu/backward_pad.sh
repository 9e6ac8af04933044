#!/usr/bin/env bash
# backward_gpu.py (mx.value_and_grad of LayerNorm and softmax through autoperfect.jit at 4096x1024,
# fresh kernel caches, then 30 interleaved warm calls against MLX's own) with our CUDA primitive's
# outputs padded (32768, the default) and at their exact sizes (0), alternating, ROUNDS times.
# On the device, after the wheel's install: export PYTHONPATH=/tmp/site:$PWD; bash backward_pad.sh
set -u
here=$(cd "$(dirname "$0")/../../.." && pwd)
for round in $(seq "${ROUNDS:-1}"); do
  for pad in 32768 0; do
    echo "== round $round, pad $pad"
    (cd "$here" && python3 -c "
import runpy
from autoperfect import native
native.load(ext=native.CUDA).set_output_pad($pad)
runpy.run_path('docs/experiments/2026-12-06m-cpu/backward_gpu.py', run_name='__main__')" 2>&1) \
      | grep -E "Device|first call|warm medians|largest" | sed -E "s/region 0.*//; s/\\(first call: /(/" | cut -c1-300
  done
done
