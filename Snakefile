# Auto-Perfect: MLX functions -> fused, verified, benchmarked kernels.
#   snakemake --cores 4 all
#   snakemake --cores 4 --report results/report.html   (after it: the results as one HTML file)
# Every stage is one rules/*.smk file; every script is a thin adapter over autoperfect.stages.

configfile: "config.yaml"


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/trace.smk"
include: "rules/canon.smk"
include: "rules/fuse.smk"
include: "rules/lower.smk"
include: "rules/generate.smk"
include: "rules/compile.smk"
include: "rules/llm.smk"
include: "rules/validate.smk"
include: "rules/roofline.smk"
include: "rules/summation.smk"
include: "rules/native.smk"
include: "rules/bench.smk"
include: "rules/cache.smk"
include: "rules/schedule_model.smk"
include: "rules/runtime.smk"
include: "rules/report.smk"
include: "rules/mutants.smk"


rule all:
    input:
        "results/report.md",
        expand("results/cache/{op}/{backend}.json", op=OPS, backend=BACKENDS),
        RUNTIME_TARGETS,


# Mutation testing of the judge (not part of `all`): snakemake --cores 4 mutants
rule mutants:
    input:
        expand("results/{op}/{backend}/mutants.json", op=OPS, backend=BACKENDS),
