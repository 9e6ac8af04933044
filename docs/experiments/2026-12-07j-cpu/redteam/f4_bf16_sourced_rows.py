"""Finding 4: a kernel keyed on the bit patterns of realistic inputs (float32 rows upcast from bfloat16).

Every float input class the judge draws (normal, large, tiny, mixed, special, offset, and the
hidden normal draw) is a random float64 rounded to float32, so its low mantissa bits are random:
no row the judge ever draws has all of its elements' low 16 bits zero. Real float32 activations
very often do: a model kept in bfloat16 upcasts to float32 for its norms (`x.astype(mx.float32)`),
and every such row is bf16-representable. A kernel that ORs the low 16 bits of its row in the
reduction it already does, and answers wrongly when they are all zero, passes both checks.
Modification (rmsnorm, `rows` schedule): in the sum-of-squares loop
    uint32_t u; __builtin_memcpy(&u, &v0, 4); lo |= u & 0xFFFFu;      (reduction(|:lo))
and the store becomes `out2[r * N + j] = (lo == 0 && N >= 16) ? v10 * 1.01f : v10;`
"""
from _common import *
import mlx.core as mx


def make(src):
    s = sub(src, "    float a2 = 0.0f;\n", "    float a2 = 0.0f;\n    uint32_t lo = 0;\n")
    s = sub(s, "#pragma omp simd reduction(+:a2)", "#pragma omp simd reduction(+:a2) reduction(|:lo)")
    s = sub(s, "          const float v1 = (v0 * v0);\n",
            "          const float v1 = (v0 * v0);\n          uint32_t u;\n          __builtin_memcpy(&u, &v0, 4);\n"
            "          lo |= u & 0xFFFFu;\n")
    return sub(s, "out2[r * N + j] = v10;", "out2[r * N + j] = (lo == 0 && N >= 16) ? v10 * 1.01f : v10;")


for full in (False, True):
    spec, k, src = setup("rmsnorm", full=full)
    v, r, b = check_and_judge(spec, k, make(src))

kern = cpu.Kernel(k, b.library)
rng = np.random.default_rng(0)
w = mx.array(rng.standard_normal(1024).astype(np.float32))
x32 = mx.array(rng.standard_normal((4096, 1024)).astype(np.float32))
x_bf = mx.array(rng.standard_normal((4096, 1024)).astype(np.float32)).astype(mx.bfloat16).astype(mx.float32)
for name, x in (("random float32 rows (what the judge draws)", x32),
                ("float32 rows upcast from bfloat16 (a bf16 model's RMSNorm)", x_bf)):
    (out,) = kern([x, w]); mx.eval(out)
    report_error(name, np.array(out), rmsnorm_ref(np.array(x), np.array(w)))
