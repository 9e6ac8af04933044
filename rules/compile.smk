# Build every candidate; builds are cached by source hash under results/cache/build.
rule compile:
    input:
        "results/{op}/{backend}/candidates",
    output:
        "results/{op}/{backend}/compile.json",
    params:
        cache="results/cache/build",
        code=stage_hash("autoperfect.stages", "autoperfect.static", "autoperfect.backends.cpu",
                        "autoperfect.backends.cuda", "autoperfect.backends.metal", "autoperfect.backends.mlx"),
    script:
        "../scripts/compile.py"
