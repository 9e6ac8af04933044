#!/usr/bin/env bash
# Every red-team finding against the current code: the static check's verdict, cpu.build's, and
# the judge's (in its own child, as the pipeline runs it). From the repository's root, venv active:
#   bash docs/experiments/2026-12-07j-cpu/redteam/run_all.sh > docs/experiments/2026-12-07j-cpu/redteam/run_all.out
here=$(cd "$(dirname "$0")" && pwd)
for f in "$here"/f*.py; do
  echo "== $(basename "$f")"
  PYTHONPATH="$here/../../../.." timeout 900 python "$f" 2>&1 | grep -E "static.check|judge passed|cpu.build refused|rejected above|verdicts over" | cut -c1-260
done
