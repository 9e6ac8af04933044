"""Finding 3: a kernel keyed on the OpenMP thread count.

The judge's child always runs with OMP_NUM_THREADS = os.cpu_count() (bench.all_cores), so a kernel
only ever meets that one team size. A user process often runs with fewer threads
(OMP_NUM_THREADS=1 in containers, worker processes, under taskset/cgroup limits, or set to a share
of the cores). `omp_get_max_threads()` is on static.py's allow-list, so a kernel that is wrong
when it is 1 (or anything but the judging machine's core count) passes both checks.
Modification (rmsnorm, `rows` schedule): after the signature
    const int ap_one = omp_get_max_threads() == 1;
(declared with a prototype, omp.h being off the include list), and the store becomes
`out2[r * N + j] = ap_one ? v10 * 1.01f : v10;`
"""
from _common import *
import os, subprocess, textwrap

PROTO = "int omp_get_max_threads(void);\n\nvoid k_"


def make(src):
    s = sub(src, "\nvoid k_", "\n" + PROTO)
    s = sub(s, HEAD, HEAD + "  const int ap_one = omp_get_max_threads() == 1;\n")
    return sub(s, "out2[r * N + j] = v10;", "out2[r * N + j] = ap_one ? v10 * 1.01f : v10;")


print("this machine: os.cpu_count() =", os.cpu_count())
for full in (False, True):
    spec, k, src = setup("rmsnorm", full=full)
    v, r, b = check_and_judge(spec, k, make(src))   # run_isolated: the pipeline's own child

if rejected(b, r):
    raise SystemExit(0)
prod = textwrap.dedent(f"""
    import sys; sys.path.insert(0, {ROOT!r} + "/tests"); sys.path.insert(0, {ROOT!r})
    sys.path.insert(0, {HERE!r})
    import numpy as np, mlx.core as mx
    from _common import rmsnorm_ref, report_error
    from op_table import config_specs
    from autoperfect.pipeline import front
    from autoperfect.backends import cpu
    (k,) = [k for k in front(config_specs()["rmsnorm"]).kernels if k]
    kern = cpu.Kernel(k, {b.library!r})
    rng = np.random.default_rng(0)
    x = mx.array(rng.standard_normal((4096, 1024)).astype(np.float32))
    w = mx.array(rng.standard_normal(1024).astype(np.float32))
    (out,) = kern([x, w]); mx.eval(out)
    import os
    report_error("production call, OMP_NUM_THREADS=" + os.environ.get("OMP_NUM_THREADS", "unset"),
                 np.array(out), rmsnorm_ref(np.array(x), np.array(w)))
""")
for threads in (str(os.cpu_count()), "1"):
    p = subprocess.run([sys.executable, "-c", prod], capture_output=True, text=True,
                       env={**os.environ, "OMP_NUM_THREADS": threads})
    print(p.stdout, end="", flush=True); print(p.stderr[-500:], end="")
