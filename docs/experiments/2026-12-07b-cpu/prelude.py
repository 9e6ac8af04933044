"""Building a kernel with its #include lines precompiled (backends.cpu.precompiled_prelude) against
building it whole: every schedule variant of a LayerNorm's forward kernel and of its derivative's
kernels at 4096x1024 (what a first call of mx.value_and_grad through autoperfect.jit builds), each
built both ways into fresh cache directories, alternating which goes first, one build at a time;
then the two libraries' machine code compared (objdump -d). Run: python prelude.py (PYTHONPATH at a
checkout, the venv active)."""
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mlx.core as mx

from autoperfect.autodiff import vjp
from autoperfect.backends import cpu
from autoperfect.canon import canonicalize
from autoperfect.runtime import front_of
from autoperfect.trace import trace


def layer_norm(x, w, b):
    m = mx.mean(x, axis=-1, keepdims=True)
    return (x - m) * mx.rsqrt(mx.var(x, axis=-1, keepdims=True) + 1e-5) * w + b


inputs = [("x", (4096, 1024), "float32"), ("w", (1024,), "float32"), ("b", (1024,), "float32")]
forward = trace(layer_norm, inputs)
graphs = [forward, vjp(canonicalize(forward))]
sources = list(dict.fromkeys(cpu.render(k, s) for g in graphs for k in front_of(g).kernels if k is not None
                             for s in cpu.schedules_for(k)))  # two schedules may render one source
whole_dir, pre_dir = (Path(tempfile.mkdtemp()) for _ in range(2))
for d in (whole_dir, pre_dir):
    cpu.vmath_object(d)  # built once a cache, before any timing
t = time.perf_counter()
headers = {tuple(cpu.precompiled_prelude(s, pre_dir)) for s in sources}
print(f"{len(sources)} sources; {len(headers)} precompiled preludes built in {time.perf_counter() - t:.2f} s "
      f"({', '.join(Path(h[1]).name for h in sorted(headers) if h)})")
precompiled = cpu.precompiled_prelude


def build(source, where, pre):
    cpu.precompiled_prelude = precompiled if pre else (lambda s, d, make=True: [])
    t = time.perf_counter()
    b = cpu.build(source, where)
    assert b.ok and not b.cached, b.log
    return time.perf_counter() - t, b.library


def code(library):
    return subprocess.run(["objdump", "-d", library], capture_output=True, text=True, check=True).stdout.split("\n", 3)[3]


total = {False: 0.0, True: 0.0}
same = 0
for i, source in enumerate(sources):
    libs = {}
    for pre in ((False, True) if i % 2 == 0 else (True, False)):
        took, libs[pre] = build(source, pre_dir if pre else whole_dir, pre)
        total[pre] += took
    same += code(libs[False]) == code(libs[True])
print(f"whole: {total[False]:.2f} s, prelude precompiled: {total[True]:.2f} s "
      f"({total[True] / total[False]:.2f}x); the same machine code: {same} of {len(sources)}")
sys.exit(0 if same == len(sources) else 1)
