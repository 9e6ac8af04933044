# The in-cache figure of the ops in RESULTS measured by an old tree's code (OLD) and this tree's,
# alternating, ROUNDS times (default 3):
#   git worktree add /tmp/ab_old 1eacb6a
#   OLD=/tmp/ab_old RESULTS=/tmp/run66/results bash docs/experiments/2026-12-07f-cpu/in_cache_ab.sh
here=$(cd "$(dirname "$0")/../../.." && pwd)
export OMP_PLACES=cores OMP_PROC_BIND=close
for i in $(seq "${ROUNDS:-3}"); do
  for tree in "$OLD" "$here"; do
    echo "== round $i, $(git -C "$tree" rev-parse --short HEAD)$(git -C "$tree" diff --quiet || echo '+changes')"
    PYTHONPATH="$tree" python "$here/docs/experiments/2026-12-07f-cpu/in_cache.py" "$RESULTS" layernorm rmsnorm add_rmsnorm mean_var
  done
done
