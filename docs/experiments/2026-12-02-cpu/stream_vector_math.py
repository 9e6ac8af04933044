import sys, numpy as np, mlx.core as mx
from dataclasses import replace
from autoperfect import bench, backends
from autoperfect.backends import cpu
from autoperfect.pipeline import front, program
from autoperfect.spec import parse_ops
import yaml
ops = parse_ops(yaml.safe_load(open("config.yaml"))["ops"])
name = sys.argv[1]
spec = ops[name] if isinstance(ops, dict) else next(o for o in ops if o.name == name)
f = front(spec)
(k,) = [k for k in f.kernels if k is not None]
scheds = {s.name: s for s in cpu.schedules_for(k)}
base = scheds[sys.argv[2]]
variants = {"plain": base, "streamed": replace(base, stream=cpu.STREAM_FROM)}
calls = {}
arrays = [mx.random.normal(i.shape) for i in spec.inputs]
mx.eval(*arrays)
for n, s in variants.items():
    src = cpu.render(k, s)
    print(n, "streams" if cpu.CpuRenderer(k, s).streams() else "no stream")
    b = cpu.build(src)
    assert b.ok, b.log[-2000:]
    prog = program(f, {k.name: cpu.Kernel(k, b.library)})
    calls[n] = (lambda p=prog: mx.eval(p(*arrays)))
calls["mlx_compile"] = (lambda c=mx.compile(spec.function()): mx.eval(c(*arrays)))
s = bench.time_interleaved(calls, 3, 31, 1)
print({n: round(float(np.median(v))*1e3, 3) for n, v in s.items()}, bench.speedup(s["streamed"], s["plain"], 1))
