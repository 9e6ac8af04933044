rule fuse:
    input:
        "results/{op}/canonical.json",
    output:
        "results/{op}/regions.json",
    params:
        code=stage_hash("autoperfect.fuse"),
    script:
        "../scripts/fuse.py"
