# Verified winners -> the kernel cache under results/cache/kernels, where autoperfect.jit finds them
# (point it there with cache_dir=...). Entries are keyed by kernel, shapes, dtypes, backend, chip and
# compiler version; the index file says what was stored, or why nothing was.
rule cache:
    input:
        kernels="results/{op}/kernels.json",
        validation="results/{op}/{backend}/validation.json",
        bench="results/{op}/{backend}/bench.json",
    output:
        "results/cache/{op}/{backend}.json",
    params:
        root="results/cache/kernels",
        code=stage_hash("autoperfect.stages"),
    script:
        "../scripts/cache.py"
