# The machine's ceilings; measured alone (all cores), like every benchmark.
rule roofline:
    output:
        "results/roofline.json",
    threads: workflow.cores
    params:
        quick=config["roofline"]["quick"],
        code=stage_hash("autoperfect.roofline"),
    script:
        "../scripts/roofline.py"
