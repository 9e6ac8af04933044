# Bugs planted into every verified variant of every kernel must all be rejected by the judge (target: `mutants`).
# A planted race shows only when the judge's threads really run at once: the job claims every core.
rule plant_mutants:
    input:
        kernels="results/{op}/kernels.json",
        validation="results/{op}/{backend}/validation.json",
    output:
        report("results/{op}/{backend}/mutants.json", caption="../report/mutants.rst", category="{op}",
               subcategory="{backend}", labels={"artifact": "planted bugs (mutants.json)"}),
    threads: workflow.cores
    params:
        spec=spec_json,
        judge=config["judge"],
        cache="results/cache/build",
        code=stage_hash("autoperfect.mutants", "autoperfect.stages"),
    script:
        "../scripts/mutants.py"
