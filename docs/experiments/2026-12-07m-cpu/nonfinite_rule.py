import sys, tempfile, pathlib
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "tests"))
from test_cpu_schedules import spec_of, kernel_of, library, BE
from autoperfect import judge
from autoperfect.backends import cpu
from autoperfect.spec import seed_for
tmp = pathlib.Path(tempfile.mkdtemp())
for fn in ["mx.softmax(x * y, axis=-1)", "mx.logsumexp(x * y, axis=-1)"]:
    spec = spec_of("f", f"def f(x, y):\n    return {fn}\n", x={"shape": [64, 300], "dtype": "bfloat16"}, y={"shape": [64, 300], "dtype": "bfloat16"})
    k = kernel_of(spec)
    for s in cpu.schedules_for(k)[:3]:
        v = judge.judge_candidates(spec, "cpu", {k.name: library(k, s, tmp)}, judge.Settings(), seed_for("nanrule"))
        print(fn, s.name, v["passed"], (v.get("reason") or "")[:260], flush=True)
