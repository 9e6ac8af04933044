#!/usr/bin/env bash
# ranked.py (a first call whose kernels the cache timed at another shape) with the code before this
# session (OLD, a checkout of f14df0d) and this checkout, alternating, ROUNDS times each:
#   git worktree add /tmp/ab_old f14df0d && OLD=/tmp/ab_old bash ranked.sh > ranked.out
set -u
here=$(cd "$(dirname "$0")/../../.." && pwd)
script="$here/docs/experiments/2026-12-07b-cpu/ranked.py"
export OMP_PLACES=cores OMP_PROC_BIND=close
for round in $(seq "${ROUNDS:-2}"); do
  for tree in "$OLD" "$here"; do
    echo "== round $round, $( [ "$tree" = "$here" ] && echo new || echo "old ($(git -C "$tree" rev-parse --short HEAD))")"
    # from the tree itself: the gate's child (python -m autoperfect.runtime) imports from its cwd first
    (cd "$tree" && PYTHONPATH="$tree" python "$script" 2>&1)
  done
done
