"""Where float16 RMSNorm's time goes (configs/mixed_precision.yaml's rmsnorm_half, 4096x2048, its `rows`
schedule): the staged source against copies cut by hand, each without one part (so wrong outputs:
timings only), and a copy that widens the weight row once per thread into a thread-local buffer
(its outputs compared with the staged source's), timed interleaved, inputs in turn from 6 copies.
Run: python parts.py (PYTHONPATH at a checkout, the warm-allocator env)."""
import pathlib

import numpy as np
import yaml
from autoperfect import backends, bench
from autoperfect.backends import cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op
BE = backends.get("cpu")
ops = yaml.safe_load(open(pathlib.Path(__file__).resolve().parents[3] / "configs/mixed_precision.yaml"))["ops"]
spec = parse_op("rmsnorm_half", ops["rmsnorm_half"])
(k,) = [k for k in front(spec).kernels if k is not None]
rng = np.random.default_rng(3)
copies = [(rng.standard_normal((4096, 2048)) * 3).astype(np.float16) for _ in range(6)]
w = rng.standard_normal(2048).astype(np.float16)
s = cpu.schedules_for(k)[0]
src = BE.render(k, s)
forms = {"staged": src,
         "no_narrow": src.replace("const int64_t jn2 = 0 + ap_f16_narrow(ap_h2, out2 + r * N + 0, N - 0);", "const int64_t jn2 = N; out2[r*N] = (uint16_t)ap_h2[5];"),
         "no_widen_w": src.replace("ap_f16_widen(in1 + b1 + 0, ap_h1, N);", "ap_h1[3] = 1;"),
         "no_widen_x": src.replace("ap_f16_widen(in0 + b0 + 0, ap_h0, N);", "ap_h0[3] = in0[b0];"),
         "w_once": src.replace("ap_f16_widen(in1 + b1 + 0, ap_h1, N);",
                               "if (ap_wr != N) { ap_f16_widen(in1 + b1 + 0, ap_wbuf, N); ap_wr = N; }")
                      .replace("const float v11 = ap_h1[j];", "const float v11 = ap_wbuf[j];")
                      .replace("void k_", "static __thread float ap_wbuf[8192] __attribute__((aligned(64))); "
                               "static __thread int64_t ap_wr = -1;\nvoid k_", 1),
         }
calls, outs = {}, {}
for form, text in forms.items():
    assert form == "staged" or text != src, form
    b = BE.build(text); assert b.ok, b.log
    kern = BE.Kernel(k, b.library, "ctypes"); o = outs[form] = np.zeros((4096, 2048), np.float16); turn = iter(range(1 << 30))
    calls[form] = lambda kern=kern, o=o, turn=turn: kern.run_numpy([copies[next(turn) % 6], w, o], k.launch)
for c in calls.values(): c()
print("w_once's outputs the staged source's:", bool(np.array_equal(outs["w_once"], outs["staged"])))
samples = bench.time_interleaved(calls, warmup=3, repeats=21, seed=3)
print({n: round(float(np.median(v)) * 1e3, 3) for n, v in samples.items()})
