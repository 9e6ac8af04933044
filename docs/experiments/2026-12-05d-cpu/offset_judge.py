"""The judge's "offset" inputs against the one-pass spread: every rendered variant of an op's kernel
is judged (each must pass), then, in each shifted variant, the one_pass_variance mutant with the
judge's classes as they are and with "offset" left out (the judge before it had that class), and the
kernel with only its test `S2 <= 2D` taken out (K still the mean of the first 16 values) with one
offset row in 8 lying (its first 16 values about 0) and with none.

    python docs/experiments/2026-12-05d-cpu/offset_judge.py mean_var layernorm
"""

import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import yaml

from autoperfect import backends, judge
from autoperfect.backends.cfamily import TRUSTED_SPREAD
from autoperfect.mutants import Mutant, plant
from autoperfect.pipeline import front
from autoperfect.spec import parse_ops

BE = backends.get("cpu")
SPECS = parse_ops(yaml.safe_load(Path("config.yaml").read_text())["ops"])


def verdict(spec, k, source, build_dir, **judge_patch):
    """The judge's verdict on `source`, with the judge's module constants in `judge_patch` set."""
    built = BE.build(source, build_dir)
    assert built.ok, built.log
    t = time.time()
    with mock.patch.multiple(judge, **{"CLASSES": judge.CLASSES, **judge_patch}):
        v = judge.judge_candidates(spec, "cpu", {k.name: built.library}, judge.Settings(), None)
    return f"{'passed' if v['passed'] else 'caught: ' + v['reason']} ({time.time() - t:.1f} s)"


def main() -> None:
    build_dir = Path(tempfile.mkdtemp())
    without = tuple(c for c in judge.CLASSES if c != "offset")
    for name in sys.argv[1:]:
        spec = SPECS[name]
        (k,) = [k for k in front(spec).kernels if k is not None]
        for s in BE.schedules_for(k):
            source = BE.render(k, s)
            print(f"{name} {s.name}: {verdict(spec, k, source, build_dir)}", flush=True)
            for m in plant(k, source):
                if m.bug != "one_pass_variance" or not isinstance(m, Mutant):
                    continue
                for label, classes in (("with offset", judge.CLASSES), ("without offset", without)):
                    print(f"  one_pass_variance {label}: {verdict(spec, k, m.source, build_dir, CLASSES=classes)}",
                          flush=True)
                untested = source.replace(f" && {TRUSTED_SPREAD})", ")")
                for label, lying in (("one row in 8 lying", judge.LYING_ROWS), ("none lying", 10**9)):
                    print(f"  test taken out, {label}: {verdict(spec, k, untested, build_dir, LYING_ROWS=lying)}",
                          flush=True)


if __name__ == "__main__":
    main()
