# autoperfect.jit's benchmarks, run when config.yaml has a `runtime:` section: cold and warm calls of
# some config ops (results/runtime.json), and a Qwen2-architecture model end to end (needs mlx-lm:
# pip install -e ".[model]"). They time, so they claim every core. Both use the pipeline's kernel
# cache: the first shows whether its entries reach user code; the second fills it on its first run.
import importlib.util

RUNTIME = config.get("runtime")
HAS_MLX_LM = importlib.util.find_spec("mlx_lm") is not None  # the optional `model` extra
RUNTIME_TARGETS = (["results/runtime.json"] + (["results/model_e2e.json"] if HAS_MLX_LM else [])
                   if RUNTIME else [])

if RUNTIME:
    _unknown = [op for op in RUNTIME["ops"] if op not in OPS]
    if _unknown:
        raise ValueError(f"runtime.ops names ops that config.yaml does not define: {_unknown}")

    rule runtime_bench:
        input:
            expand("results/cache/{op}/{backend}.json", op=RUNTIME["ops"], backend=BACKENDS),
        output:
            report("results/runtime.json", caption="../report/runtime_json.rst", category="Summary",
                   subcategory="measurements", labels={"artifact": "autoperfect.jit (runtime.json)"}),
        threads: workflow.cores
        params:
            ops=[OPS[op].to_json() for op in RUNTIME["ops"]],
            settings={"repeats": RUNTIME["repeats"]},
            root="results/cache/kernels",
            code=stage_hash("autoperfect.bench_runtime"),
        script:
            "../scripts/bench_runtime.py"

    rule model_e2e:
        output:
            report("results/model_e2e.json", caption="../report/model_e2e_json.rst", category="Summary",
                   subcategory="measurements", labels={"artifact": "model end to end (model_e2e.json)"}),
        threads: workflow.cores
        params:
            settings=RUNTIME["model"],
            root="results/cache/kernels",
            code=stage_hash("autoperfect.model_e2e"),
        script:
            "../scripts/model_e2e.py"
