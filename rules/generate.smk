rule generate:
    input:
        "results/{op}/kernels.json",
    output:
        directory("results/{op}/{backend}/candidates"),
    params:
        provider=config["generator"]["provider"],
        code=stage_hash("autoperfect.generate.compiler"),
    script:
        "../scripts/generate.py"
