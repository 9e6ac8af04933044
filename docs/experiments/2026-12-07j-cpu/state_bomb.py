"""A kernel that keeps state between calls: RMSNorm's first CPU schedule with a call counter that
stops writing after LIMIT calls. Built with the project's own command line but around cpu.build
(whose check would refuse it), it passes the judge, which calls a kernel a few dozen times; a user's
call after the LIMIT-th returns whatever its output buffer held. Prints the static check's verdict,
cpu.build's, the judge's, and how many of LIMIT + 10 calls then give MLX's result (the judge
runs some of its checks in this process, and those calls count too).

    PYTHONPATH=$PWD python docs/experiments/2026-12-07j-cpu/state_bomb.py [LIMIT]
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import mlx.core as mx

root = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(root / "tests"))
from op_table import config_specs, small_shapes  # noqa: E402

from autoperfect import judge, static  # noqa: E402
from autoperfect.backends import cpu  # noqa: E402
from autoperfect.pipeline import front  # noqa: E402

LIMIT = int(sys.argv[1]) if len(sys.argv) > 1 else 200
spec = config_specs()["rmsnorm"]
spec = spec.with_shapes(small_shapes(spec.inputs))
(k,) = [k for k in front(spec).kernels if k]
source = cpu.render(k, cpu.schedules_for(k)[0])
head = "const int64_t *strides) {\n"
bomb = source.replace(head, head + f"  static int calls; if (++calls > {LIMIT}) return;\n", 1)

print("static.check:", static.check(bomb, "cpu", k.name))
with tempfile.TemporaryDirectory() as tmp:
    build = cpu.build(bomb, Path(tmp) / "cache")
    print("cpu.build:", build.ok, build.log.strip().splitlines()[-1][:160] if build.log.strip() else "")
    lib = Path(tmp) / "bomb.so"
    (Path(tmp) / "bomb.c").write_text(bomb)
    subprocess.run(["gcc", *cpu.FLAGS, "-o", str(lib), str(Path(tmp) / "bomb.c"), "-lm"], check=True)
    verdict = judge.judge_candidates(spec, "cpu", {k.name: str(lib)}, judge.Settings(shapes=2), 7)
    print("judge (built around cpu.build's check):", "passed" if verdict["passed"] else verdict["reason"][:200])
    kernel = cpu.Kernel(k, str(lib))
    right = wrong = 0
    for call in range(1, LIMIT + 11):  # a new draw each call: a stale output would match the last one
        xs = [mx.random.normal(i.shape, key=mx.random.key(call * 7 + n)) for n, i in enumerate(spec.inputs)]
        (got,) = kernel(xs)
        ok = mx.allclose(got, spec.function()(*xs), atol=1e-5).item()  # evaluates: the kernel runs now
        right, wrong = right + ok, wrong + (not ok)
        if not ok and wrong == 1:
            print(f"call {call} in this process: first wrong output")
    print(f"{right} calls right, {wrong} wrong of {LIMIT + 10}")
