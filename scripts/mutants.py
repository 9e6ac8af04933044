from autoperfect import stages

stages.mutants_stage(snakemake.params.spec, snakemake.input.kernels, snakemake.input.validation,
                     dict(snakemake.params.judge), snakemake.params.cache, snakemake.output[0])
