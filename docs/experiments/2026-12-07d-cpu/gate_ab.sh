#!/usr/bin/env bash
# The gate on the same saved requests (capture.py) by the code before (OLD, a checkout) and this
# checkout, alternating, ROUNDS times each:
#   git worktree add /tmp/ab_old 214bef5 && python capture.py /tmp/req && \
#   OLD=/tmp/ab_old REQ=/tmp/req bash gate_ab.sh > gate_ab.out
set -u
here=$(cd "$(dirname "$0")/../../.." && pwd)
script="$here/docs/experiments/2026-12-07d-cpu/gate_time.py"
export OMP_PLACES=cores OMP_PROC_BIND=close
for round in $(seq "${ROUNDS:-3}"); do
  for tree in "$OLD" "$here"; do
    label=$( [ "$tree" = "$here" ] && echo new || echo "old ($(git -C "$tree" rev-parse --short HEAD))")
    for req in "$REQ"/req1.json "$REQ"/req2.json; do
      echo "round $round, $label, $(basename "$req"): $(cd "$tree" && PYTHONPATH="$tree" python "$script" "$req" 2>&1 | tail -1)"
    done
  done
done
