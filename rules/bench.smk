# Benchmarks claim every core so no other job shares the machine while they time.
rule bench:
    input:
        validation="results/{op}/{backend}/validation.json",
        roofline="results/roofline.json",
        native="results/native.json",
    output:
        report("results/{op}/{backend}/bench.json", caption="../report/bench.rst", category="{op}",
               subcategory="{backend}", labels={"artifact": "timings (bench.json)"}),
    threads: workflow.cores
    params:
        spec=spec_json,
        bench=config["bench"],
        code=stage_hash("autoperfect.contenders", "autoperfect.stages"),
    script:
        "../scripts/bench.py"
