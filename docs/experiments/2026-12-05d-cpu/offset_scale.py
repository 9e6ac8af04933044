"""How far from 0 the judge's "offset" rows sit (judge.OFFSET): for rows of the judge's lengths and
offsets c (times the spread of 1), mean_var's error bound (bounds.py) against the variance, and the
share of rows where E[x^2] - mean^2 in float32 (numpy's sums) and the two-pass variance miss it.

    python docs/experiments/2026-12-05d-cpu/offset_scale.py mean_var
"""

import sys
from pathlib import Path

import numpy as np
import yaml

from autoperfect import interp
from autoperfect.bounds import propagate
from autoperfect.pipeline import front
from autoperfect.spec import parse_ops


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "mean_var"
    spec = parse_ops(yaml.safe_load(Path("config.yaml").read_text())["ops"])[name]
    rng = np.random.default_rng(5)
    for n in (7, 33, 129, 257, 1024, 1031):
        f = front(spec.with_shapes({"x": (256, n)}))
        for c in (1e2, 1e3, 3e3, 1e4, 3e4):
            x = rng.standard_normal((256, n)) + c * rng.choice([-1, 1], size=(256, 1)) * rng.uniform(0.5, 1, size=(256, 1))
            x = x.astype(np.float32).astype(np.float64)
            ref = interp.evaluate(f.traced, [x], "float64")[-1]
            _, errs = propagate(f.canonical, [x])
            bound = np.broadcast_to(errs[f.canonical.outputs[-1]], ref.shape)
            xf = x.astype(np.float32)
            m = xf.sum(-1, dtype=np.float32) / np.float32(n)
            naive = (xf * xf).sum(-1, dtype=np.float32) / np.float32(n) - m * m
            d = xf - m[:, None]
            two = (d * d).sum(-1, dtype=np.float32) / np.float32(n)
            ok = np.isfinite(bound)
            print(f"n {n} c {c:g}: judgeable {ok.mean():.2f}, bound/var {np.median(bound / ref):.2g}, "
                  f"one-pass misses {(np.abs(naive - ref) > bound)[ok].mean():.2f}, "
                  f"two-pass misses {(np.abs(two - ref) > bound)[ok].mean():.2f}")


if __name__ == "__main__":
    main()
