"""The judge's "offset" inputs against the one-pass spread: every rendered variant of an op's kernel
is judged (each must pass), then the one_pass_variance mutant of each shifted variant is judged with
the judge's classes as they are and with "offset" left out (the judge before it had that class).

    python docs/experiments/2026-12-05d-cpu/offset_judge.py mean_var layernorm
"""

import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

import yaml

from autoperfect import backends, judge
from autoperfect.mutants import Mutant, plant
from autoperfect.pipeline import front
from autoperfect.spec import parse_ops

BE = backends.get("cpu")
SPECS = parse_ops(yaml.safe_load(Path("config.yaml").read_text())["ops"])


def verdict(spec, k, source, build_dir, classes=judge.CLASSES):
    built = BE.build(source, build_dir)
    assert built.ok, built.log
    t = time.time()
    with mock.patch.object(judge, "CLASSES", classes):
        v = judge.judge_candidates(spec, "cpu", {k.name: built.library}, judge.Settings(), None)
    return v, time.time() - t


def main() -> None:
    build_dir = Path(tempfile.mkdtemp())
    without = tuple(c for c in judge.CLASSES if c != "offset")
    for name in sys.argv[1:]:
        spec = SPECS[name]
        (k,) = [k for k in front(spec).kernels if k is not None]
        for s in BE.schedules_for(k):
            source = BE.render(k, s)
            v, dt = verdict(spec, k, source, build_dir)
            print(f"{name} {s.name}: {'passed' if v['passed'] else 'FAILED ' + v['reason']} ({dt:.1f} s)", flush=True)
            for m in plant(k, source):
                if m.bug != "one_pass_variance" or not isinstance(m, Mutant):
                    continue
                for label, classes in (("with offset", judge.CLASSES), ("without offset", without)):
                    v, dt = verdict(spec, k, m.source, build_dir, classes)
                    print(f"  one_pass_variance {label}: {'passed' if v['passed'] else 'caught: ' + v['reason']} "
                          f"({dt:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
