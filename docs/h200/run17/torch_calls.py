"""GPU run 17 (2026-12-04, the H200, MLX 0.32.4 `mlx-cuda-13`): gpu_bench._torch_calls, now
contenders.torch_calls on the inputs moved to the GPU, on four config ops at their spec sizes: each
baseline checked against MLX eager's outputs, timed once synchronized and once queued.
    (../shared/device/README.md's two calls; the second:)
    bash .whl-install.sh && export PYTHONPATH=/tmp/site:$PWD && python docs/h200/run17/torch_calls.py
Output of that run:
    rmsnorm checks {'torch_eager': True, 'torch_compile': True} ... compile_s {'torch_compile': 4.23} ms {'torch_eager': 0.135, 'torch_compile': 0.105}
    softmax checks {'torch_eager': True, 'torch_compile': True} ... compile_s {'torch_compile': 0.50} ms {'torch_eager': 0.042, 'torch_compile': 0.096}
    gelu_tanh checks {'torch_eager': True, 'torch_compile': True} ... compile_s {'torch_compile': 0.87} ms {'torch_eager': 0.145, 'torch_compile': 0.199}
    mean_var checks {'torch_eager': True, 'torch_compile': True} ... compile_s {'torch_compile': 0.36} ms {'torch_eager': 0.093, 'torch_compile': 0.156}
(one call each after a first: a smoke test of the path, not a benchmark)."""
import time, yaml
import mlx.core as mx
from autoperfect import contenders, gpu_bench
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
print("mlx", mx.__version__, mx.default_device())
for op in ["rmsnorm", "softmax", "gelu_tanh", "mean_var"]:
    spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
    f = front(spec)
    xs, arrays = contenders.inputs_for(spec)
    ref = contenders.mlx_values(contenders.evaluate(spec.function(), arrays))
    checks = {}
    calls, queued, cs = gpu_bench._torch_calls(f, xs, checks, ref)
    t = {}
    for name, c in calls.items():
        c(); t0 = time.perf_counter(); c(); t[name] = round((time.perf_counter() - t0) * 1e3, 3)
        queued[name]()
    print(op, "checks", checks, "calls", sorted(calls), "queued", sorted(queued), "compile_s", cs, "ms", t, flush=True)
