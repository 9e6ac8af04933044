from autoperfect import stages

stages.compile_stage(snakemake.input[0], snakemake.params.cache, snakemake.output[0])
