"""Finding 1: a kernel keyed on its buffers' address mod 64.

The judge places every buffer at 0 or 8 bytes past a 64-byte boundary (program.RUN_OFFSETS) and
nowhere else. MLX's CPU allocator on this machine hands the user's arrays out at 8/24/40/56 mod 64
(every large array we allocated: 24), and a contiguous slice can start at any multiple of 4. So a
kernel that is wrong whenever its input's `address & 63 >= 16` passes the judge and is wrong on
(almost) every production call.
Modification (rmsnorm, plain `rows` schedule): after the signature
    const int ap_mis = ((uintptr_t)bufs[0] & 63) >= 16;
and the store `out2[r * N + j] = v10;` becomes `out2[r * N + j] = ap_mis ? v10 * 1.01f : v10;`
"""
from _common import *
import mlx.core as mx
from autoperfect.program import guarded_call

EVIL_DECL = "  const int ap_mis = ((uintptr_t)bufs[0] & 63) >= 16;\n"


def make(src):
    s = sub(src, HEAD, HEAD + EVIL_DECL)
    return sub(s, "out2[r * N + j] = v10;", "out2[r * N + j] = ap_mis ? v10 * 1.01f : v10;")


for full in (False, True):
    spec, k, src = setup("rmsnorm", full=full)
    evil = make(src)
    v, r, b = check_and_judge(spec, k, evil)

# production: the kernel called on MLX arrays, as autoperfect.jit / Program.__call__ does
kern = cpu.Kernel(k, b.library)
rng = np.random.default_rng(0)
x = mx.array(rng.standard_normal((4096, 1024)).astype(np.float32))
w = mx.array(rng.standard_normal(1024).astype(np.float32))
(out,) = kern([x, w])
mx.eval(out)
print("  production MLX buffer addresses mod 64: x", cpu.as_numpy(x).ctypes.data % 64,
      "w", cpu.as_numpy(w).ctypes.data % 64, "out", cpu.as_numpy(out).ctypes.data % 64)
report_error("production call (4096x1024, MLX buffers)", np.array(out), rmsnorm_ref(np.array(x), np.array(w)))
# the same inputs through the judge's own guarded_call at each multiple of 8
for off in range(0, 64, 8):
    (o,) = guarded_call(kern, k, [np.array(x), np.array(w)], offset=off)
    err = np.max(np.abs(o.astype(np.float64) - rmsnorm_ref(np.array(x), np.array(w))))
    print(f"  buffers at {off:2d} bytes past a 64-byte boundary: max abs err {err:.3g}"
          + ("   <- the judge's offsets (RUN_OFFSETS)" if off in (0, 8) else ""))
