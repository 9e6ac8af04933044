# The judge runs each candidate in a child process; it reads all cores' worth of memory bandwidth.
rule validate:
    input:
        kernels="results/{op}/kernels.json",
        compiled="results/{op}/{backend}/compile.json",
        llm=llm_summary,
    output:
        report("results/{op}/{backend}/validation.json", caption="../report/validation.rst",
               category="{op}", subcategory="{backend}", labels={"artifact": "judge (validation.json)"}),
    params:
        spec=spec_json,
        judge=config["judge"],
        code=stage_hash("autoperfect.judge"),
    script:
        "../scripts/validate.py"
