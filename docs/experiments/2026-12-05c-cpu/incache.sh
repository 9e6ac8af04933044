#!/bin/sh
# Row kernels' compute alone: each SOURCE rewritten to take its streaming path (ap_stream = 1) with
# plain stores for the streaming ones, built with the CPU backend's flags and timed by
# ../2026-12-04-cpu/hb.c on 64 rows of 1024 in cache, one thread, twice in turn (the sources'
# basenames must differ).
# Usage: sh docs/experiments/2026-12-05c-cpu/incache.sh SYMBOL "INPUTS ELEM_OUTPUTS ROW_OUTPUTS" SOURCE...
# e.g. sh .../incache.sh k_6d67fd54ba301128 "3 1 0" DIR/layernorm.rows_shifted_v16_near.c ...
set -e
sym=$1; args=$2; shift 2
here=$(dirname "$0"); tmp=$(mktemp -d)
# OFFSET=c adds c to every value of the first input (rows far from 0), else they are uniform in [-1, 1]
sed 's|p\[j\]=(float)rand()/RAND_MAX\*2-1;|p[j]=(float)rand()/RAND_MAX*2-1+(i==0\&\&getenv("OFFSET")?atof(getenv("OFFSET")):0);|' \
    "$here/../2026-12-04-cpu/hb.c" > "$tmp/hb.c"
grep -q OFFSET "$tmp/hb.c"
gcc -O2 -o "$tmp/hb" "$tmp/hb.c" -ldl
for src in "$@"; do
  name=$(basename "$src" .c)
  sed -e 's/const int ap_stream = .*/const int ap_stream = 1;/' \
      -e 's/_mm512_stream_ps/_mm512_storeu_ps/g' "$src" > "$tmp/$name.c"
  gcc -O3 -march=native -fopenmp -ffp-contract=off -fno-math-errno -fno-trapping-math -fPIC -shared \
      -o "$tmp/$name.so" "$tmp/$name.c" -lm
done
for round in 1 2; do
  for src in "$@"; do
    OMP_NUM_THREADS=1 "$tmp/hb" "$tmp/$(basename "$src" .c).so" "$sym" $args 64 1024
  done
done
rm -rf "$tmp"
