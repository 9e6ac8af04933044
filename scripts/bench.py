from autoperfect import stages

stages.bench_stage(snakemake.params.spec, snakemake.input.validation, snakemake.input.roofline,
                   dict(snakemake.params.bench), snakemake.output[0])
