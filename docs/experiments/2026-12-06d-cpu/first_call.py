"""What the schedule model changes at a never-timed kernel's first call through autoperfect.jit:
the call's wall time, the variants gated, and the chosen variant's median against the fastest of all.

Each function runs in a fresh process per condition (`python first_call.py run FN CONDITION CACHE`):
`fresh`, an empty cache (every variant gated and timed), and `model`, a cache holding only the
variant medians of a pipeline run's benchmarks (`python first_call.py seed RESULTS CACHE`, the
kernels of config.yaml's ops, none of the functions below). The conditions alternate, three times.
`python first_call.py all RESULTS` does everything and prints one line per run.
"""
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHAPE = (4096, 1024)
FUNCTIONS = {
    "swish": "lambda x: x * mx.sigmoid(x)",
    "gelu_erf": "lambda x: 0.5 * x * (1 + mx.erf(x * 0.7071067811865476))",
    "logsumexp": "lambda x: mx.log(mx.sum(mx.exp(x - mx.max(x, axis=-1, keepdims=True)), axis=-1))",
    "l2norm": "lambda x: x / mx.sqrt(mx.sum(x * x, axis=-1, keepdims=True) + 1e-6)",
}


def seed(results: str, cache_dir: str) -> None:
    from autoperfect import artifacts, cache, stages
    c = cache.Cache(cache_dir)
    for bench in sorted(Path(results).glob("*/cpu/bench.json")):
        kernels = {k.name: k for k in stages.load_kernels(str(bench.parent.parent / "kernels.json"))}
        for name, v in artifacts.read_json(str(bench)).get("variants", {}).items():
            if len(v.get("median_s", {})) > 1:
                c.store(kernels[name], "cpu", v["chosen"], "seeded", None, {"passed": False, "reason": "seeded"},
                        {"median_s": v["median_s"]}, "seed")


def run(fn_name: str, condition: str, cache_dir: str) -> dict:
    import mlx.core as mx
    import numpy as np
    import autoperfect
    from autoperfect import cache
    fn = eval(FUNCTIONS[fn_name], {"mx": mx})
    x = mx.array(np.random.default_rng(7).standard_normal(SHAPE, dtype=np.float32))
    mx.eval(x)
    f = autoperfect.jit(fn, cache_dir=cache_dir, race=False)
    t0 = time.perf_counter()
    mx.eval(f(x))
    first_s = time.perf_counter() - t0
    trace = f.last_trace.kernels[0]
    c = cache.Cache(cache_dir)
    (timed,) = c.timings(trace.runs, "cpu")
    entries = [json.loads(p.read_text()) for p in c.current_dir("cpu").glob("*.json")]
    (entry,) = [e for e in entries if e["origin"] == "runtime"]
    return {"fn": fn_name, "condition": condition, "first_call_s": first_s, "variant": trace.variant,
            "kernel": trace.runs, "medians": timed["median_s"], "ranked_by": entry["bench"].get("ranked_by")}


def main() -> None:
    if sys.argv[1] == "seed":
        seed(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "run":
        print(json.dumps(run(sys.argv[2], sys.argv[3], sys.argv[4])))
    else:
        results, rows = sys.argv[2], []
        for repeat in range(3):
            for fn_name in FUNCTIONS:
                for condition in ("fresh", "model") if repeat % 2 == 0 else ("model", "fresh"):
                    d = tempfile.mkdtemp()
                    if condition == "model":
                        subprocess.run([sys.executable, __file__, "seed", results, d], check=True)
                    out = subprocess.run([sys.executable, __file__, "run", fn_name, condition, d], check=True,
                                         capture_output=True, text=True).stdout
                    rows.append(json.loads(out.strip().splitlines()[-1]))
                    shutil.rmtree(d)
                    r = rows[-1]
                    print(json.dumps({k: r[k] for k in ("fn", "condition", "first_call_s", "variant")}), flush=True)
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
