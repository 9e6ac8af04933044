# Benchmarks claim every core so no other job shares the machine while they time.
rule bench:
    input:
        validation="results/{op}/{backend}/validation.json",
        roofline="results/roofline.json",
        native="results/native.json",
    output:
        "results/{op}/{backend}/bench.json",
    threads: workflow.cores
    params:
        spec=spec_json,
        bench=config["bench"],
        code=stage_hash("autoperfect.contenders", "autoperfect.stages"),
    script:
        "../scripts/bench.py"
