rule lower:
    input:
        canonical="results/{op}/canonical.json",
        regions="results/{op}/regions.json",
    output:
        report("results/{op}/kernels.json", caption="../report/kernels.rst", category="{op}",
               subcategory="compiler", labels={"artifact": "KernelIR (kernels.json)"}),
    params:
        code=stage_hash("autoperfect.kernel_ir"),
    script:
        "../scripts/lower.py"
