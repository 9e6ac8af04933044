"""Finding 2: a kernel that assumes its input and output share their alignment (crash in production).

The judge gives every buffer of a call the same offset from a 64-byte boundary (guarded_call's
`offset`, 0 or 8), so an input and the output always have the same alignment, row by row. In
production they don't: MLX's allocator gave our 4096x1024 input 24 mod 64 and the native
launcher's output 0 mod 64. A plausible hand-written optimisation -- peel each row until the input is
32-byte aligned (aligned reads), then write whole vectors with the (allowed) non-temporal store
_mm256_stream_ps, which requires an aligned address -- passes static checks and the judge, and
segfaults (general-protection fault on a misaligned vmovntps) on the first production call.
Modification (rmsnorm, `rows` schedule): `#include <immintrin.h>`, and the final `omp simd` store
loop replaced by the peeled loop in FINAL below.
"""
from _common import *
import subprocess, textwrap

FINAL = """    {
      float *o = out2 + r * N;
      const float *xi = in0 + b0;
      int64_t j = 0;
      /* peel to the input's 32-byte boundary (aligned reads), then stream whole vectors out */
      for (; j < N && ((uintptr_t)(xi + j) & 31); j++) o[j] = (xi[j] * r7) * in1[b1 + j];
      for (; j + 8 <= N; j += 8) {
        const float *xa = (const float *)__builtin_assume_aligned(xi + j, 32);
        float t[8];
        for (int l = 0; l < 8; l++) t[l] = (xa[l] * r7) * in1[b1 + j + l];
        __m256 v;
        __builtin_memcpy(&v, t, 32);
        _mm256_stream_ps(o + j, v);
      }
      for (; j < N; j++) o[j] = (xi[j] * r7) * in1[b1 + j];
    }
  }
  _mm_sfence();
}
"""


def make(src):
    s = sub(src, "#include <math.h>\n", "#include <math.h>\n#include <immintrin.h>\n")
    start = s.index("    #pragma omp simd\n    for (int64_t j = 0; j < N; j++) {\n      const float v0 = in0[b0 + j];\n      const float v8")
    return s[:start] + FINAL


for full in (False, True):
    spec, k, src = setup("rmsnorm", full=full)
    evil = make(src)
    v, r, b = check_and_judge(spec, k, evil)

if rejected(b, r):
    raise SystemExit(0)
prod = textwrap.dedent(f"""
    import sys; sys.path.insert(0, {ROOT!r} + "/tests"); sys.path.insert(0, {ROOT!r})
    import numpy as np, mlx.core as mx
    from op_table import config_specs
    from autoperfect.pipeline import front
    from autoperfect.backends import cpu
    (k,) = [k for k in front(config_specs()["rmsnorm"]).kernels if k]
    kern = cpu.Kernel(k, {b.library!r})
    rng = np.random.default_rng(0)
    x = mx.array(rng.standard_normal((4096, 1024)).astype(np.float32))
    w = mx.array(rng.standard_normal(1024).astype(np.float32))
    mx.eval(x, w)
    print("  x at", cpu.as_numpy(x).ctypes.data % 64, "mod 64", flush=True)
    (out,) = kern([x, w]); mx.eval(out)
    print("  production call returned", flush=True)
""")
p = subprocess.run([sys.executable, "-c", prod], capture_output=True, text=True)
print(p.stdout, end="")
print("  production call (4096x1024 on MLX arrays) exit status:", p.returncode,
      "(-11 = SIGSEGV)" if p.returncode == -11 else "", p.stderr[-300:])
