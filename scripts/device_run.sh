#!/usr/bin/env bash
# The GPU run on the lent H200 (docs/gpu-h200.md says how it was called). After the first of
# ../shared/device/README.md's two calls (the wheel's first half copied to /tmp/parts):
#   run, carry [".whlB", ".whl-install.sh"], command: AP_OPS=rmsnorm,chain,... bash scripts/device_run.sh run
#   run (while warm), no carry, command:              AP_OPS=... bash scripts/device_run.sh mutants
# `run` is `prepare` (install, GPU tests, stages and judge) then `bench` (roofline and benchmarks),
# which can also be two calls while the machine stays warm (each under the device's 600 s limit).
# `run` installs MLX's CUDA build (from AP_ROOT, where .whl-install.sh and .whlB are), runs the GPU tests
# beside the pipeline's stages and the judge (`--phase prepare`), then alone on the GPU the roofline and
# the benchmarks (`--phase bench`); `mutants` plants the judge's bugs and judges them on the GPU. Each
# leaves results (AP_RESULTS, /tmp/h200 by default: outside the checkout, which each call replaces)
# packed in $OUT/h200.tar.gz, the logs beside it.
set -uo pipefail
phase=${1:-run}
R=${AP_RESULTS:-/tmp/h200}
if [ "$phase" = run ] || [ "$phase" = prepare ]; then  # (rerun installs too, below)
  (cd "${AP_ROOT:-.}" && bash .whl-install.sh) || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
PY=python3
# our CUDA primitive (autoperfect.native.CUDA): without it kernels run through precompiled_cuda_kernel
if [ "$phase" != mutants ]; then $PY -m autoperfect.native build 2>&1 | tail -2; fi
pack() { tar czf "$OUT/h200.tar.gz" -C "$(dirname "$R")" "$(basename "$R")"; }
# the GPU, its driver and its clocks before a run (gpu.csv), and the clocks again after it
gpu_before() { nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv | tee "$OUT/gpu.csv"; }
gpu_after() { nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader \
  | tee -a "$OUT/gpu.csv"; }
case "$phase" in
  run|prepare|bench)
    if [ "$phase" != bench ]; then
      gpu_before
      (timeout 240 $PY -m pytest -q -p no:cacheprovider tests/test_cuda.py -k "gpu_kernel or primitive" > "$OUT/pytest.log" 2>&1;
       echo "pytest rc=$?" >> "$OUT/pytest.log") &
      tests=$!
      $PY -m autoperfect.gpu_bench configs/h200.yaml "$R" --phase prepare --deadline "${AP_PREPARE_S:-260}" \
        ${AP_OPS:+--ops "$AP_OPS"} 2>&1 \
        | tee "$OUT/run.log"
      wait "$tests"; tail -3 "$OUT/pytest.log"
    fi
    [ "$phase" = prepare ] && { pack; exit 0; }
    # the clocks and power while the benchmarks run, five times a second
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
      --format=csv -lms 200 > "$OUT/clocks.csv" 2>&1 &
    smi=$!
    timeout "${AP_BENCH_S:-250}" $PY -m autoperfect.gpu_bench configs/h200.yaml "$R" --phase bench \
      ${AP_OPS:+--ops "$AP_OPS"} 2>&1 \
      | tee -a "$OUT/run.log"
    kill "$smi"
    gpu_after
    pack ;;
  mutants)
    $PY -m autoperfect.gpu_bench configs/h200.yaml "$R" --phase mutants --mutant-jobs "${AP_MUTANT_JOBS:-3}" \
      --deadline "${AP_MUTANTS_S:-300}" 2>&1 | tee "$OUT/mutants.log"
    pack ;;
  rerun)  # a fresh machine: bench again the sources the judge verified in an earlier run (AP_PREVIOUS)
    (cd "${AP_ROOT:-.}" && bash .whl-install.sh) || exit 1
    gpu_before
    rm -rf "$R" && cp -r "${AP_PREVIOUS:-prev_h200}" "$R" && rm -f "$R"/*/cuda/bench.json "$R"/*/cuda/mutants.json \
      "$R"/summary.json "$R"/roofline.json
    timeout "${AP_BENCH_S:-270}" $PY -m autoperfect.gpu_bench configs/h200.yaml "$R" --phase bench --reuse \
      ${AP_OPS:+--ops "$AP_OPS"} 2>&1 | tee "$OUT/run.log"
    gpu_after
    pack ;;
  *) echo "usage: device_run.sh run|prepare|bench|mutants|rerun" >&2; exit 2 ;;
esac
