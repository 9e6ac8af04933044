rule fuse:
    input:
        "results/{op}/canonical.json",
    output:
        report("results/{op}/regions.json", caption="../report/regions.rst", category="{op}",
               subcategory="compiler", labels={"artifact": "fusion regions (regions.json)"}),
    params:
        code=stage_hash("autoperfect.fuse"),
    script:
        "../scripts/fuse.py"
