"""The rows whose head lies (judge.LYING_ROWS): the shifted kernel with only its test taken out (the
shifted sums trusted on every row of 494 and more, K still the mean of the first 16 values), judged
with one row in 8 lying and with none.

    python docs/experiments/2026-12-05d-cpu/lying_rows.py
"""

import tempfile
from pathlib import Path
from unittest import mock
import yaml
from autoperfect import backends, judge
from autoperfect.backends.cfamily import TRUSTED_SPREAD
from autoperfect.pipeline import front
from autoperfect.spec import parse_ops
BE = backends.get("cpu")
SPECS = parse_ops(yaml.safe_load(Path("config.yaml").read_text())["ops"])
bd = Path(tempfile.mkdtemp())
for name in ("mean_var", "layernorm"):
    spec = SPECS[name]
    (k,) = [k for k in front(spec).kernels if k is not None]
    src = BE.render(k, next(s for s in BE.schedules_for(k) if s.name == "rows_shifted_v16"))
    mut = src.replace(f" && {TRUSTED_SPREAD})", ")")
    assert mut != src
    lib = BE.build(mut, bd).library
    for lying in (8, 10**9):
        with mock.patch.object(judge, "LYING_ROWS", lying):
            v = judge.judge_candidates(spec, "cpu", {k.name: lib}, judge.Settings(), None)
        print(name, "LYING_ROWS", lying, v["passed"], v.get("reason", "")[:200], flush=True)
