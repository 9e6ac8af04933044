rule lower:
    input:
        canonical="results/{op}/canonical.json",
        regions="results/{op}/regions.json",
    output:
        "results/{op}/kernels.json",
    params:
        code=stage_hash("autoperfect.kernel_ir"),
    script:
        "../scripts/lower.py"
