"""The op-level benchmark, run inside one allocator condition (bench.run_condition's child).

Every contender does what a user pays for: the call, the output allocation, the dispatch and
`mx.eval`. Baselines: MLX eager, `mx.compile`, numpy (the same graph, op by op, in the op's dtypes)
and the spec's `fast:` expression (an `mx.fast` twin), checked against the reference before it is
timed, since a wrong baseline would make a lie of the ratio.
"""

from __future__ import annotations

import math

import numpy as np

from . import backends, bench, dtypes, interp
from .judge import draw
from .pipeline import front, program
from .spec import OpSpec, seed_for

VARIANT_ROUNDS = 7


def _inputs(spec: OpSpec):
    import mlx.core as mx

    xs = draw(spec, "normal", np.random.default_rng(seed_for(spec.name, "bench")))
    arrays = [mx.array(x).astype(dtypes.to_mlx(i.dtype)) for x, i in zip(xs, spec.inputs)]
    mx.eval(*arrays)
    return xs, arrays


def _evaluated(fn, args):
    import mlx.core as mx

    def call():
        out = fn(*args)
        mx.eval(out)
        return out
    return call


def fast_baseline(spec: OpSpec):
    """The spec's `fast:` expression as a function of the inputs, or None."""
    import mlx.core as mx

    if not spec.fast:
        return None
    names = [i.name for i in spec.inputs]
    code = compile(spec.fast, f"<op {spec.name} fast>", "eval")
    return lambda *args: eval(code, {"mx": mx}, dict(zip(names, args)))


def agrees(out, ref: np.ndarray) -> bool:
    """A baseline must compute the op: within 1e-3 of the float64 reference, relative to its scale."""
    import mlx.core as mx

    got = np.asarray(out.astype(mx.float32), dtype=np.float64)
    scale = np.max(np.abs(ref[np.isfinite(ref)]), initial=1.0)
    return got.shape == ref.shape and bool(np.all(np.abs(got - ref) <= 1e-3 * scale))


def choose_variants(f, variants: dict[str, dict[str, str]], arrays, be, seed: int) -> dict[str, dict]:
    """For a kernel with several verified variants, time each (with the others fixed) and keep the
    fastest. Returns kernel -> {"chosen": variant, "median_s": {variant: s}}."""
    kernels = {k.name: k for k in f.kernels if k is not None}
    first = {name: be.Kernel(kernels[name], next(iter(libs.values()))) for name, libs in variants.items()}
    choice = {}
    for kname, libs in sorted(variants.items()):
        if len(libs) < 2:
            choice[kname] = {"chosen": next(iter(libs)), "median_s": {}}
            continue
        calls = {}
        for vname, lib in sorted(libs.items()):
            loaded = {**first, kname: be.Kernel(kernels[kname], lib)}
            calls[vname] = _evaluated(program(f, loaded), arrays)
        samples = bench.time_interleaved(calls, 2, VARIANT_ROUNDS, seed)
        medians = {v: float(np.median(s)) for v, s in samples.items()}
        choice[kname] = {"chosen": min(medians, key=medians.get), "median_s": medians}
    return choice


def measure(payload: dict) -> dict:
    """Child entry point: payload has spec, backend, variants {kernel: {variant: library}},
    warmup, repeats."""
    import mlx.core as mx

    spec = OpSpec.from_json(payload["spec"])
    be = backends.get(payload["backend"])
    seed = seed_for(spec.name, "bench-order")
    f = front(spec)
    xs, arrays = _inputs(spec)
    choice = choose_variants(f, payload["variants"], arrays, be, seed)
    loaded = {k.name: be.Kernel(k, payload["variants"][k.name][choice[k.name]["chosen"]])
              for k in f.kernels if k is not None}
    fn = spec.function()
    ref = interp.evaluate(f.traced, xs, "float64")[0]
    contenders = {"kernel": _evaluated(program(f, loaded), arrays),
                  "mlx_eager": _evaluated(fn, arrays),
                  "mlx_compile": _evaluated(mx.compile(fn), arrays),
                  "numpy": lambda: interp.evaluate(f.traced, xs, "native")}
    checks = {}
    fast = fast_baseline(spec)
    if fast is not None:
        checks["mlx_fast"] = agrees(fast(*arrays), ref)
        if checks["mlx_fast"]:
            contenders["mlx_fast"] = _evaluated(fast, arrays)
    samples = bench.time_interleaved(contenders, payload["warmup"], payload["repeats"], seed)
    kernel = samples.pop("kernel")
    return {"kernel": bench.summarize(kernel, seed),
            "baselines": {name: bench.summarize(s, seed) for name, s in samples.items()},
            "speedup": {name: bench.speedup(kernel, s, seed) for name, s in samples.items()},
            "variants": choice, "baseline_checks": checks,
            "bytes_moved": ideal_bytes(f), "machine": bench.machine()}


def ideal_bytes(f) -> int:
    """The fused op's ideal traffic: each input read once, each output written once."""
    g = f.traced
    total = sum(math.prod(n.shape) * dtypes.ITEMSIZE[n.dtype] for n in g.inputs)
    return total + sum(math.prod(g.nodes[o].shape) * dtypes.ITEMSIZE[g.nodes[o].dtype] for o in g.outputs)
