#!/usr/bin/env bash
# The first call of mx.value_and_grad through autoperfect.jit (LayerNorm and softmax at 4096x1024,
# fresh kernel caches: every variant built and gated), the code before this session's gate changes
# (OLD, a checkout of bb4ecce) against this checkout, alternating, ROUNDS times each:
#   git worktree add /tmp/ab_old bb4ecce && OLD=/tmp/ab_old bash first_call.sh > first_call.out
set -u
here=$(cd "$(dirname "$0")/../../.." && pwd)
export OMP_PLACES=cores OMP_PROC_BIND=close
for round in $(seq "${ROUNDS:-2}"); do
  for tree in "$OLD" "$here"; do
    echo "== round $round, $( [ "$tree" = "$here" ] && echo new || echo "old ($(git -C "$tree" rev-parse --short HEAD))")"
    # from the tree itself: the gate's child (python -m autoperfect.runtime) imports from its cwd first
    (cd "$tree" && PYTHONPATH="$tree" python docs/experiments/2026-12-06m-cpu/backward_gpu.py 2>&1) \
      | grep -E "first call|warm medians" | sed -E "s/region 0.*//; s/\\(first call: /(/" | cut -c1-260
  done
done
