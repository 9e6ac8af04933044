# The learned schedule model (autoperfect.schedule_model) scored on this run's benchmarks: each
# kernel's variants ranked by a model fitted on the other kernels' medians, as the runtime ranks a
# kernel nobody timed. Reads what the bench stage measured; times nothing.
rule schedule_model:
    input:
        expand("results/{op}/kernels.json", op=OPS),
        expand("results/{op}/{backend}/validation.json", op=OPS, backend=BACKENDS),
        expand("results/{op}/{backend}/bench.json", op=OPS, backend=BACKENDS),
    output:
        "results/schedule_model.json",
    params:
        ops=list(OPS),
        backends=BACKENDS,
        code=stage_hash("autoperfect.stages"),
    script:
        "../scripts/schedule_model.py"
