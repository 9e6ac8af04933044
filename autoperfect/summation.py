"""Both sides of compensated summation, measured: what it costs and what it buys, by row length.

The CPU renderer sums a row of at least `COMPENSATE_FROM` terms in blocks whose totals are added with
Neumaier's compensation (CRenderer.reduce_loop); shorter rows get the plain SIMD sum. This module
justifies that threshold with numbers: a row-sum kernel rendered both ways, for row lengths around
it, timed interleaved through the user's call path (native dispatch, output allocation, `mx.eval`)
and compared with a float64 sum of the same float32 inputs.

The inputs are positive (1 + |normal|/4): every term pushes the total the same way, the case where a
plain sum drifts; relative error is reported in units of float32's unit roundoff u = 2^-24.
"""

from __future__ import annotations

import argparse

import numpy as np

from . import artifacts, backends, bench
from .backends.cfamily import COMPENSATED_BLOCK, Schedule
from .backends.cpu import COMPENSATE_FROM
from .pipeline import front
from .spec import parse_op, seed_for

U = 2.0 ** -24
ROW_LENGTHS = (256, 1024, 4096, 16384, 65536, 262144, 1048576)
ELEMENTS = 1 << 22   # per call, whatever the row length (R = ELEMENTS / N rows)


def row_sum_kernel(n: int, rows: int):
    spec = parse_op("row_sum", {"fn": "def row_sum(x):\n    return mx.sum(x, axis=-1)\n",
                                "inputs": {"x": {"shape": [rows, n], "dtype": "float32"}}})
    (k,) = [k for k in front(spec).kernels if k is not None]
    return k


def measure_length(n: int, elements: int, warmup: int, repeats: int) -> dict:
    import mlx.core as mx

    be = backends.get("cpu")
    rows = max(1, elements // n)
    k = row_sum_kernel(n, rows)
    ways = {"plain": Schedule("plain"), "compensated": Schedule("compensated", compensate=1)}
    kernels = {}
    for name, schedule in ways.items():
        build = be.build(be.render(k, schedule))
        if not build.ok:
            raise RuntimeError(f"the {name} row sum did not build:\n{build.log[-2000:]}")
        kernels[name] = be.Kernel(k, build.library)
    rng = np.random.default_rng(seed_for("summation", str(n)))
    x = (1.0 + np.abs(rng.standard_normal((rows, n))) / 4).astype(np.float32)
    exact = x.astype(np.float64).sum(axis=1)
    xm = mx.array(x)
    mx.eval(xm)

    def call(kernel):
        def run():
            (out,) = kernel([xm])
            mx.eval(out)
            return out
        return run

    calls = {name: call(kernel) for name, kernel in kernels.items()}
    out: dict = {"n": n, "rows": rows}
    for name, run in calls.items():
        got = np.asarray(run(), dtype=np.float64)
        rel = np.abs(got - exact) / exact
        out[name] = {"max_rel_error_u": float(rel.max() / U), "mean_rel_error_u": float(rel.mean() / U)}
    seed = seed_for("summation-order", str(n))
    samples = bench.time_interleaved(calls, warmup, repeats, seed)
    for name, s in samples.items():
        out[name].update(bench.summarize(s, seed))
    cost = bench.speedup(samples["compensated"], samples["plain"], seed)  # plain time / compensated time
    out["compensated_time_ratio"] = {"median": 1.0 / cost["median"],
                                     "ci95": sorted(1.0 / c for c in cost["ci95"])}
    out["compensated_by_default"] = n >= COMPENSATE_FROM
    return out


def measure(payload: dict) -> dict:
    """Child entry point (bench.run_condition): payload has warmup and repeats."""
    return {
        "what": "row sums of positive float32 terms: plain SIMD sum vs blocks added with compensation",
        "compensate_from": COMPENSATE_FROM,
        "block": COMPENSATED_BLOCK,
        "unit_roundoff": U,
        "elements_per_call": ELEMENTS,
        "lengths": [measure_length(n, ELEMENTS, payload["warmup"], payload["repeats"]) for n in ROW_LENGTHS],
        "measured_at": bench.measured_at(),
        "machine": bench.machine(),
    }


def run(out: str, warmup: int = 3, repeats: int = 15, timeout_s: float = 600) -> None:
    """Measure in a child under the warm allocator, like every benchmark, and write `out`."""
    result = bench.run_condition("warm", "autoperfect.summation:measure",
                                 {"warmup": warmup, "repeats": repeats}, timeout_s)
    artifacts.write_json(out, result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", help="where to write the JSON (e.g. results/summation.json)")
    args = parser.parse_args()
    run(args.output)


if __name__ == "__main__":
    main()
