rule canon:
    input:
        "results/{op}/graph.json",
    output:
        "results/{op}/canonical.json",
    params:
        code=stage_hash("autoperfect.canon"),
    script:
        "../scripts/canon.py"
