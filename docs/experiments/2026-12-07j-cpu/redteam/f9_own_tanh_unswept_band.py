"""Finding 9: a candidate's own approximation of tanh is never swept, and the judge's public draws
(fixed seeds) leave magnitude bands untested.

judge.function_accuracy sweeps 2^20 points of each approximated function, but of the *renderer's*
probe kernel for the candidate's schedule (for a source no schedule renders: every schedule's
libm/libmvec/our tanh): the candidate's own arithmetic is never swept. Its outputs are then only
checked on the judge's draws. The public draws use fixed seeds (spec.seed_for(spec.name, "judge",
n, cls)), so anyone can compute them; the hidden draw is 'normal' class only (|x| < ~6). For
gelu_tanh no public draw (shapes=2 or 4, every class, scale and spec shapes) has |x| in
(8.308, 9.9). A GELU whose tanh is wrong for 28 <= |y| < 42 (|x| ~ 8.4-9.8) passes, and the
verdict's `ulp` report even says tanh is within its bound.
Modification (gelu_tanh 4096x1024, `libm` schedule): `tanhf(v9)` -> `ap_tanh(v9)`, with
    static inline float ap_tanh(float y) { const float a = fabsf(y);
      return (a >= 28.0f && a < 42.0f) ? 0.0f : tanhf(y); }
(a stand-in for a hand-written tanh with a bad range-reduction segment). Users hit it on any GELU
input of magnitude ~8.4-9.8, e.g. the outlier activations of LLM MLPs; there GELU(x) comes out
x/2 (or 0.5*x for negative x, instead of ~0).
"""
from _common import *
import mlx.core as mx

FN = ("static inline float ap_tanh(float y) {\n  const float a = fabsf(y);\n"
      "  return (a >= 28.0f && a < 42.0f) ? 0.0f : tanhf(y);\n}\n\nvoid k_")

for full, shapes in ((False, 2), (True, 2), (True, 4)):
    spec, k, src = setup("gelu_tanh", full=full)
    evil = sub(sub(src, "tanhf(v9)", "ap_tanh(v9)"), "\nvoid k_", "\n" + FN)
    v, r, b = check_and_judge(spec, k, evil, shapes=shapes)
    if r and r["passed"]:
        print("    verdict's ulp report for tanh:", {kk: r["ulp"]["tanh"][kk] for kk in ("worst_ulp", "bound_ulp", "within_bound", "schedule")})

rng = np.random.default_rng(0)
x = rng.standard_normal((4096, 1024)).astype(np.float32)
x[::64, :32] = rng.uniform(8.5, 9.7, size=(64, 32)) * rng.choice([-1, 1], size=(64, 32))  # a few outliers
judge_on_inputs(spec, k, b.library, [x], "activations with a few outliers of magnitude 8.5-9.7")
(out,) = cpu.Kernel(k, b.library)([mx.array(x)]); mx.eval(out)
xd = x.astype(np.float64)
ref = 0.5 * xd * (1 + np.tanh(0.7978845608028654 * (xd + 0.044715 * xd ** 3)))
o = np.array(out)
i = np.unravel_index(np.argmax(np.abs(o - ref)), o.shape)
print(f"  production: worst element x={x[i]:.4f}: GELU should be {ref[i]:.4f}, kernel gives {o[i]:.4f};"
      f" {int((np.abs(o - ref) > 1e-3).sum())} elements off by > 1e-3")
