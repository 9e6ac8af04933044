"""16-bit row kernels on the CPU: each row's float16 or bfloat16 inputs widened once into float
buffers on the stack and its outputs narrowed from one (CRenderer.staged_row), against the renderer
before (8e90686: the prelude's forms on every read of every pass), built from the same kernels and
schedules and timed interleaved in one process on the same arrays, read from memory (each call's
input one of several copies in turn, beyond the caches). Every schedule's outputs are compared with
its build by the renderer before: the largest difference in steps of the 16-bit type (0: the same
bits; a schedule without a fixed vector width leaves it to the compiler for each loop, and with it a
plain reduction's order and which of libmvec's vector functions runs). The staged renderer stages a
bfloat16 row only in a scratch stash's schedules; `everywhere` (bfloat16 ops) stages it in every one. Run: python row_stage.py
[rows] (PYTHONPATH at a checkout, the warm-allocator env; rows default 4096, of 2048)."""
import pathlib
import sys

import numpy as np

from autoperfect import backends, bench, dtypes, judge
from autoperfect.backends import cfamily, cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "2026-12-06f-cpu"))
from sources_same import load  # noqa: E402 - 2026-12-06f's, which loads a module as it was at a commit

BEFORE = "8e90686"
BE = backends.get("cpu")
ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
SHAPE = [ROWS, 2048]
COPIES = 6  # 6 x 16.8 MB of input: beyond the 36 MB of caches
OPS = {  # as a model in float16 writes them
    "softmax": "def f(x):\n    return mx.softmax(x, axis=-1)\n",
    "softmax_precise": "def f(x):\n    return mx.softmax(x, axis=-1, precise=True)\n",
    "rmsnorm": "def f(x, w):\n    return w * (x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-5))\n",
    "rmsnorm_llama": ("def f(x, w):\n    xf = x.astype(mx.float32)\n"
                      "    y = xf * mx.rsqrt(mx.mean(xf * xf, axis=-1, keepdims=True) + 1e-6)\n"
                      "    return w * y.astype(x.dtype)\n"),
    "layernorm": ("def f(x, w, b):\n    m = mx.mean(x, axis=-1, keepdims=True)\n"
                  "    v = mx.var(x, axis=-1, keepdims=True)\n    return (x - m) * mx.rsqrt(v + 1e-5) * w + b\n"),
}


class Everywhere(cfamily.CRenderer):
    """A row kernel's bfloat16 rows staged in every schedule, not a scratch stash's alone."""

    def staging(self):
        return frozenset(a for a, arg in enumerate(self.k.args) if arg.dtype in ("float16", "bfloat16")
                         and arg.space == "elem" and (arg.role == "out" or arg.inner == "contiguous"))


def main() -> None:
    old = load(BEFORE, "autoperfect/backends/cfamily.py", "cfamily_before")
    rng = np.random.default_rng(20261206)
    x, w, b = rng.standard_normal(SHAPE) * 3, rng.standard_normal(SHAPE[-1]), rng.standard_normal(SHAPE[-1])
    print(f"{SHAPE[0]}x{SHAPE[1]}, median ms over interleaved rounds, inputs in turn from {COPIES} copies")
    for dtype in ("float16", "bfloat16"):
        copies = [judge.storage(dtypes.round_to(x, dtype).astype(np.float32), dtype) for _ in range(COPIES)]
        given = {n: judge.storage(dtypes.round_to(v, dtype).astype(np.float32), dtype) for n, v in (("w", w), ("b", b))}
        for name, fn in OPS.items():
            names = fn[fn.index("(") + 1:fn.index(")")].split(", ")
            shapes = {n: SHAPE if n == "x" else SHAPE[-1:] for n in names}
            spec = parse_op(name, {"fn": fn, "inputs": {n: {"shape": s, "dtype": dtype} for n, s in shapes.items()}})
            (k,) = [k for k in front(spec).kernels if k is not None]
            calls, outs = {}, {}
            for s in cpu.schedules_for(k):
                forms = [("before", old.CRenderer), ("staged", cfamily.CRenderer)]
                for form, renderer in forms + ([("everywhere", Everywhere)] if dtype == "bfloat16" else []):
                    build = BE.build(renderer(k, s).render())
                    assert build.ok, build.log
                    kern = BE.Kernel(k, build.library, "ctypes")
                    key = f"{form}:{s.name}"
                    outs[key] = np.zeros(SHAPE, np.uint16)
                    turn = iter(range(1 << 30))
                    calls[key] = (lambda kern=kern, o=outs[key], turn=turn, rest=[given[n] for n in names[1:]]:
                                  kern.run_numpy([copies[next(turn) % COPIES], *rest, o], k.launch))
            for call in calls.values():
                call()
            apart = {key: steps(outs[key], outs["before:" + key.split(":")[1]])
                     for key in outs if not key.startswith("before:")}
            samples = bench.time_interleaved(calls, warmup=3, repeats=15, seed=11)
            med = {n: float(np.median(v)) * 1e3 for n, v in samples.items()}
            best = {f: min((n for n in med if n.startswith(f + ":")), key=med.get) for f in ("before", "staged", "everywhere")
                    if f + ":" + s.name in med}
            print(f"{name} {dtype}: " + ", ".join(f"{n} {v:.3f}" for n, v in med.items()))
            for form in list(best)[1:]:
                r = bench.speedup(samples[best[form]], samples[best["before"]], seed=11)
                print(f"  best {form} {best[form]} over best before {best['before']}: {r['median']:.2f}x "
                      f"[{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]")
            print(f"  largest difference from before in 16-bit steps: {apart}", flush=True)


def steps(a: np.ndarray, b: np.ndarray) -> int:
    """The largest distance between two arrays of 16-bit float bits in steps of their grid (sign and
    magnitude made one monotone order; NaN, not drawn here, would count as far)."""
    ia, ib = (np.where(v >= 0x8000, 0x8000 - v.astype(np.int64), v.astype(np.int64)) for v in (a, b))
    return int(np.abs(ia - ib).max(initial=0))


if __name__ == "__main__":
    main()
