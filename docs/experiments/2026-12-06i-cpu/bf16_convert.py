"""bfloat16 rounding in vectors by AVX512_BF16's conversion (cfamily.BF16_VECTOR's ap_bf16_narrow16 and
ap_bf16_round16, where no lane is subnormal) against the integer lanes alone (the same source with
`#undef __AVX512BF16__` before those functions, after the headers, which define it again: `/int`), every vectors schedule of bfloat16 ops as models write them,
4096x2048 read from memory (inputs in turn from 6 copies), interleaved, with torch.compile's kernel on
the same bits. First line per op: outputs whose bits differ between the two builds. Run: python
bf16_convert.py (PYTHONPATH at a checkout, the warm-allocator env)."""
import numpy as np
import torch

from autoperfect import backends, bench, judge
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

BE = backends.get("cpu")
R, N = 4096, 2048
OPS = {
    "silu": ("def silu(x):\n    return x * mx.sigmoid(x)\n", lambda x: x * torch.sigmoid(x), ("x",)),
    "scaled_add": ("def scaled_add(x, y):\n    return x + 0.5 * y\n", lambda x, y: x + 0.5 * y, ("x", "y")),
    "rmsnorm_llama": ("def rmsnorm_llama(x, w):\n    xf = x.astype(mx.float32)\n"
                      "    y = xf * mx.rsqrt(mx.mean(xf * xf, axis=-1, keepdims=True) + 1e-6)\n"
                      "    return w * y.astype(x.dtype)\n",
                      lambda x, w: w * (x.float() * torch.rsqrt((x.float() ** 2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype),
                      ("x", "w")),
}
rng = np.random.default_rng(7)


def bits(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a.astype(np.int16)).view(torch.bfloat16)


for name, (fn, torch_fn, args) in OPS.items():
    shapes = {a: [N] if a == "w" else [R, N] for a in args}
    entry = {"fn": fn, "inputs": {a: {"shape": s, "dtype": "bfloat16"} for a, s in shapes.items()}}
    (k,) = [k for k in front(parse_op(name, entry)).kernels if k is not None]
    copies = [[judge.storage(rng.standard_normal(s).astype(np.float32) * 3, "bfloat16") for s in shapes.values()]
              for _ in range(6)]
    calls, outs = {}, {}
    for s in (s for s in cpu.schedules_for(k) if s.vectors):
        source = BE.render(k, s)
        integer = source.replace("static inline __m512i ap_bf16_bits16", "#undef __AVX512BF16__\nstatic inline __m512i ap_bf16_bits16")
        assert integer != source
        for label, text in ((s.name, source), (f"{s.name}/int", integer)):
            b = BE.build(text)
            assert b.ok, b.log
            kern = BE.Kernel(k, b.library, "ctypes")
            o = outs[label] = np.zeros((R, N), np.uint16)
            turn = iter(range(1 << 30))
            calls[label] = lambda kern=kern, o=o, turn=turn: kern.run_numpy([*copies[next(turn) % 6], o], k.launch)
    tcopies = [[bits(a) for a in c] for c in copies]
    compiled = torch.compile(torch_fn)
    tturn = iter(range(1 << 30))
    calls["torch_compile"] = lambda: compiled(*tcopies[next(tturn) % 6])
    for c in calls.values():
        c()
    print(name, "outputs differing between the builds",
          {lbl: int((outs[lbl] != outs[f"{lbl}/int"]).sum()) for lbl in outs if not lbl.endswith("/int")})
    samples = bench.time_interleaved(calls, warmup=3, repeats=21, seed=7)
    print(name, "median ms", {n: round(float(np.median(v)) * 1e3, 3) for n, v in samples.items()})
