rule report:
    input:
        expand("results/{op}/{backend}/validation.json", op=OPS, backend=BACKENDS),
        expand("results/{op}/{backend}/bench.json", op=OPS, backend=BACKENDS),
        "results/roofline.json",
        "results/summation.json",
        RUNTIME_TARGETS,
    output:
        md="results/report.md",
        plots=directory("results/plots"),
    params:
        ops=list(OPS),
        backends=BACKENDS,
        code=stage_hash("autoperfect.report"),
    script:
        "../scripts/report.py"
