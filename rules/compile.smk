# Build every candidate; builds are cached by source hash under results/cache/build.
rule compile:
    input:
        "results/{op}/{backend}/candidates",
    output:
        "results/{op}/{backend}/compile.json",
    params:
        cache="results/cache/build",
        code=stage_hash("autoperfect.backends.cpu"),
    script:
        "../scripts/compile.py"
