#!/usr/bin/env bash
# The gate's wall time for RMSNorm 4096x1024 in process (scripts/profile_gate.py), the code before
# this session (OLD) and after it (NEW) alternating, a fresh cache each run:
#   git worktree add /tmp/ab_old 442da45 && git worktree add /tmp/ab_new 7afe131
#   OLD=/tmp/ab_old NEW=/tmp/ab_new bash docs/experiments/2026-12-07l-cpu/gate_ab.sh
set -u
for round in 1 2 3; do
  for side in OLD NEW; do
    dir=${!side}
    cache=$(mktemp -d)
    echo "== round $round $side"
    (cd "$dir" && AUTOPERFECT_CACHE=$cache PYTHONPATH=$dir OMP_PLACES=cores OMP_PROC_BIND=close \
       python scripts/profile_gate.py 4096x1024 2>&1 | grep -i -m2 "gate")
    rm -rf "$cache"
  done
done
