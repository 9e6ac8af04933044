"""An op's chosen variant rendered with schedule(static) against schedule(dynamic, CHUNK), interleaved
with MLX eager and mx.compile (what sits between calls in the benchmark's rounds)."""
import json, sys, yaml, numpy as np, mlx.core as mx
from dataclasses import replace
from autoperfect import backends, bench
from autoperfect.backends import cfamily, cpu
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_op
from autoperfect import contenders as C
op, chunk = sys.argv[1], sys.argv[2]
spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
chosen = json.load(open(f"results/{op}/cpu/bench.json"))["variants"]
be = backends.get("cpu"); f = front(spec); xs, arrays = C.inputs_for(spec)
k = [k for k in f.kernels if k][0]
sched = {s.name: s for s in be.schedules_for(k)}[sys.argv[3] if len(sys.argv) > 3 else chosen[k.name]["chosen"]]
calls = {}
for label, spelling in (("static", "static"), ("dynamic", f"dynamic, {chunk}")):
    class R(cpu.CpuRenderer):
        parallel_for = f"#pragma omp parallel for schedule({spelling})"
        def parallel(self, loop):
            return [l.replace("schedule(static)", f"schedule({spelling})") for l in super().parallel(loop)]
    src = R(k, sched).render()
    assert spelling in src
    b = be.build(src); assert b.ok, b.log
    calls[label] = C.evaluated(program(f, {k.name: be.Kernel(k, b.library)}), arrays)
fn = spec.function()
calls["mlx_eager"] = C.evaluated(fn, arrays); calls["mlx_compile"] = C.evaluated(mx.compile(fn), arrays)
s = bench.time_interleaved(calls, 3, 31, 7)
print(op, sched.name, {n: f"{np.median(v)*1e3:.3f}" for n, v in s.items()}, "dynamic over static", {k: round(v, 3) if isinstance(v, float) else [round(x, 3) for x in v] for k, v in bench.speedup(s["dynamic"], s["static"], 7).items()})
