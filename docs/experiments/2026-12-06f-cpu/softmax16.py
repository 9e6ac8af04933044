"""Softmax with a 16-bit output: every CPU variant the pipeline offers, timed interleaved in one
process on the same arrays (4096x2048 by default, read from memory: each call's input is one of
several copies, in turn, beyond the caches), the scratch stash (exps kept in a float buffer on the
stack, read back by the final pass) against the variants that exponentiate twice. Outputs of every
variant compared with the first's (max difference in 16-bit ulps: summation orders differ).
Run: python softmax16.py [rows] (PYTHONPATH at a checkout, the warm-allocator env)."""
import sys

import numpy as np

from autoperfect import backends, bench, dtypes, judge
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

BE = backends.get("cpu")
ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
SHAPE = [ROWS, 2048]
COPIES = 6  # 6 x 16.8 MB of input: beyond the 36 MB of caches
OPS = {
    "softmax_precise_bf16": ("def f(x):\n    return mx.softmax(x, axis=-1, precise=True)\n", "bfloat16"),
    "softmax_bf16": ("def f(x):\n    return mx.softmax(x, axis=-1)\n", "bfloat16"),
    "softmax_f16": ("def f(x):\n    return mx.softmax(x, axis=-1)\n", "float16"),
}


def main() -> None:
    rng = np.random.default_rng(20261206)
    print(f"{SHAPE[0]}x{SHAPE[1]}, median ms over interleaved rounds, inputs in turn from {COPIES} copies")
    for name, (fn, dtype) in OPS.items():
        spec = parse_op(name, {"fn": fn, "inputs": {"x": {"shape": SHAPE, "dtype": dtype}}})
        (k,) = [k for k in front(spec).kernels if k is not None]
        x = dtypes.round_to(rng.standard_normal(SHAPE) * 3, dtype).astype(np.float32)
        bits = judge.storage(x, dtype)
        copies = [bits.copy() for _ in range(COPIES)]
        calls, outs = {}, {}
        for s in cpu.schedules_for(k):
            build = BE.build(BE.render(k, s))
            assert build.ok, build.log
            kern = BE.Kernel(k, build.library, "ctypes")
            outs[s.name] = np.zeros(SHAPE, np.uint16)
            turn = iter(range(1 << 30))
            calls[s.name] = (lambda kern=kern, o=outs[s.name], turn=turn:
                             kern.run_numpy([copies[next(turn) % COPIES], o], k.launch))
        for call in calls.values():
            call()
        first = next(iter(outs.values())).astype(np.int32)
        apart = {n: int(np.abs(o.astype(np.int32) - first).max()) for n, o in outs.items()}
        samples = bench.time_interleaved(calls, warmup=3, repeats=15, seed=5)
        med = {n: float(np.median(v)) * 1e3 for n, v in samples.items()}
        stashed = [n for n in med if "scratch" in n]
        plain = [n for n in med if "scratch" not in n]
        best_s, best_p = min(stashed, key=med.get), min(plain, key=med.get)
        r = bench.speedup(samples[best_s], samples[best_p], seed=5)
        print(f"{name}: " + ", ".join(f"{n} {v:.3f}" for n, v in med.items()))
        print(f"  best stash {best_s} over best other {best_p}: {r['median']:.2f}x [{r['ci95'][0]:.2f}, "
              f"{r['ci95'][1]:.2f}]; largest difference from {next(iter(outs))} in 16-bit steps: {apart}", flush=True)


if __name__ == "__main__":
    main()
