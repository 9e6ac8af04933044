rule trace:
    output:
        "results/{op}/graph.json",
    params:
        spec=spec_json,
        code=stage_hash("autoperfect.stages"),
    script:
        "../scripts/trace.py"
