"""float16 in the CPU kernels: the bit forms of the prelude (ap_f16_load / ap_f16_store) against
the _Float16 casts they replaced, on the same kernels, timed interleaved in one process.

Each kernel is rendered by the current renderer for every schedule it is offered; the old form is
the same source with float16 read as `(float)in[i]` from `_Float16` buffers, written as
`(_Float16)v` and rounded as `(float)(_Float16)v` (what cfamily rendered before 2026-12-06). Both
are built with the backend's flags and called through ctypes on the same arrays, outputs compared
bit for bit first. Run: python half_io.py (PYTHONPATH at a checkout, the warm-allocator env).
"""
import re
import sys

import numpy as np

from autoperfect import backends, bench
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

BE = backends.get("cpu")
SHAPE = [4096, 2048]
OPS = {
    "silu": "def silu(x):\n    return x * mx.sigmoid(x)\n",
    "rmsnorm": "def rmsnorm(x):\n    xf = x.astype(mx.float32)\n"
               "    return (xf * mx.rsqrt(mx.mean(xf * xf, axis=-1, keepdims=True) + 1e-6)).astype(x.dtype)\n",
}


def old_form(source: str) -> str:
    source = re.sub(r"ap_f16_load\((in\d+\[[^\]]*\])\)", r"(float)\1", source)
    source = re.sub(r"ap_f16_store\((\w+)\)", r"(_Float16)\1", source)
    source = source.replace("static inline float ap_round_f16(float f) { return ap_f16_value(ap_f16_bits(f)); }",
                            "static inline float ap_round_f16(float f) { return (float)(_Float16)f; }")
    return re.sub(r"(const )?uint16_t \*restrict (in|out)(\d+) = \((const )?uint16_t \*\)",
                  r"\1_Float16 *restrict \2\3 = (\4_Float16 *)", source)


def main() -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_normal(SHAPE).astype(np.float16)
    for name, fn in OPS.items():
        spec = parse_op(name, {"fn": fn, "inputs": {"x": {"shape": SHAPE, "dtype": "float16"}}})
        (k,) = [k for k in front(spec).kernels if k is not None]
        for schedule in cpu.schedules_for(k):
            new = BE.render(k, schedule)
            old = old_form(new)
            assert "_Float16 *restrict" in old and "ap_f16_load(in" not in old
            kernels, outs = {}, {}
            for form, source in (("bits", new), ("_Float16", old)):
                build = BE.build(source)
                assert build.ok, build.log
                kernels[form] = BE.Kernel(k, build.library, "ctypes")
                outs[form] = np.zeros(SHAPE, np.float16)
            calls = {form: (lambda kern=kern, out=outs[form]: kern.run_numpy([x, out], k.launch))
                     for form, kern in kernels.items()}
            for call in calls.values():
                call()
            same = np.array_equal(outs["bits"].view(np.uint16), outs["_Float16"].view(np.uint16))
            samples = bench.time_interleaved(calls, warmup=3, repeats=21, seed=7)
            ratio = bench.speedup(samples["bits"], samples["_Float16"], seed=7)
            med = {f: bench.summarize(s, 7)["median_s"] * 1e3 for f, s in samples.items()}
            print(f"{name} {schedule.name}: bits {med['bits']:.3f} ms, _Float16 {med['_Float16']:.3f} ms, "
                  f"{ratio['median']:.2f}x [{ratio['ci95'][0]:.2f}, {ratio['ci95'][1]:.2f}]; same bits: {same}",
                  flush=True)


if __name__ == "__main__":
    sys.exit(main())
