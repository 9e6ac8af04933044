#!/usr/bin/env bash
# On the device, after the wheel's install (export PYTHONPATH=/tmp/site:$PWD and the extension
# built): fills a kernel cache (first calls compile and gate), then runs warmup_probe.py with each
# output's pad 0 (exact sizes) and 32768 (the default) in turn, ROUNDS times, one process each, and
# once each under nsys where the device has it (the CUDA API calls' summary: cudaMemcpy and
# cudaMallocManaged are the allocator's moves to unified memory).
set -u
d=$(cd "$(dirname "$0")" && pwd)
export AP_CACHE=/tmp/ap_probe_cache
ROUNDS=2 python3 "$d/warmup_probe.py" > "$OUT/fill.out" 2>&1
for round in $(seq "${ROUNDS:-2}"); do
  for pad in 0 32768; do
    echo "== round $round, pad $pad"
    AP_PAD=$pad ROUNDS=40 python3 "$d/warmup_probe.py" 2>&1 | grep -v "first call"
  done
done
nsys=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -n "$nsys" ]; then
  for pad in 0 32768; do
    AP_PAD=$pad ROUNDS=40 "$nsys" profile -t cuda -f true -o "/tmp/probe$pad" python3 "$d/warmup_probe.py" > /dev/null 2>&1
    echo "== nsys, pad $pad: CUDA API calls"
    "$nsys" stats -q -r cuda_api_sum "/tmp/probe$pad.nsys-rep" 2>&1 | head -30
  done
else
  echo "no nsys on this machine"
fi
