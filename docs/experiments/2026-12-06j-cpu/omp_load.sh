#!/bin/sh
# omp_load.py idle and with one core kept busy by a shell loop, with libgomp's default wait policy
# and with OMP_WAIT_POLICY=passive; two runs of each (PYTHONPATH at a checkout). Run: sh omp_load.sh
here=$(dirname "$0"); cache=$(mktemp -d)
python "$here/omp_load.py" "$cache" > /dev/null  # compiled and verified once; then from disk
for load in idle busy; do
  for run in 1 2; do
    if [ $load = busy ]; then sh -c 'while :; do :; done' & loop=$!; sleep 0.5; fi
    echo "$load default: $(python "$here/omp_load.py" "$cache")"
    echo "$load passive: $(OMP_WAIT_POLICY=passive python "$here/omp_load.py" "$cache")"
    if [ $load = busy ]; then kill $loop; fi
  done
done
rm -rf "$cache"
