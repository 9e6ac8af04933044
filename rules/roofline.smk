# The machine's ceilings; measured alone (all cores), like every benchmark.
rule roofline:
    output:
        report("results/roofline.json", caption="../report/roofline_json.rst", category="Summary",
               subcategory="measurements", labels={"artifact": "roofline (roofline.json)"}),
    threads: workflow.cores
    params:
        quick=config["roofline"]["quick"],
        code=stage_hash("autoperfect.roofline"),
    script:
        "../scripts/roofline.py"
