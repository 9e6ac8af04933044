"""Finding 6: one-pass variance that switches to two passes only where the judge's `offset` rows live.

The judge's `offset` class puts every row 1500-3000x its spread from 0 (OFFSET=3e3 times a factor in
[0.5, 1]); every other class is centred near 0. A LayerNorm that takes the variance in one pass
(E[x^2] - mean^2) and falls back to the two-pass sum only when the one-pass result shows heavy
cancellation (var < 1e-6 * mean^2, i.e. an offset past ~1000x the spread) looks like a reasonable
speed/accuracy heuristic, passes static checks and the judge, and is wrong -- by the judge's own
error bounds -- on rows 300-900x their spread from 0 (e.g. un-centred features, values like
500 +- 1), where the one-pass formula cancels away most of the variance's digits.
Modification (layernorm 4096x1024, `rows` schedule): the second (two-pass) reduction becomes
conditional, see ONEPASS below.
"""
from _common import *

ONEPASS = """    float q = 0.0f;
    #pragma omp simd reduction(+:q)
    for (int64_t j = 0; j < N; j++) {
      const float v0 = in0[b0 + j];
      q += v0 * v0;
    }
    const float var1 = q / r2 - r3 * r3;
    const int cancel = !(var1 >= 1e-6f * (r3 * r3));
    float a6 = 0.0f;
    if (cancel) {"""


def make(src):
    s = sub(src, "    float a6 = 0.0f;\n    {", ONEPASS)
    return sub(s, "    const float r6 = a6;\n    const float r7 = (r6 / r2);",
               "    const float r6 = a6;\n    const float r7 = cancel ? (r6 / r2) : var1;")


for full in (False, True):
    spec, k, src = setup("layernorm", full=full)
    v, r, b = check_and_judge(spec, k, make(src))

rng = np.random.default_rng(1)
w = rng.standard_normal(1024).astype(np.float32)
bias = rng.standard_normal(1024).astype(np.float32)
kern = cpu.Kernel(k, b.library)
import mlx.core as mx
for c in (10, 100, 500, 800, 2000):
    x = (rng.standard_normal((4096, 1024)) + c * rng.choice([-1, 1], size=(4096, 1))).astype(np.float32)
    judge_on_inputs(spec, k, b.library, [x, w, bias], f"4096x1024 rows {c}x their spread from 0")
    (out,) = kern([mx.array(x), mx.array(w), mx.array(bias)]); mx.eval(out)
    xd = x.astype(np.float64)
    ref = (xd - xd.mean(-1, keepdims=True)) / np.sqrt(xd.var(-1, keepdims=True) + 1e-5) * w + bias
    report_error(f"    production call, offset {c}x", np.array(out), ref)
