from autoperfect import stages

stages.trace(snakemake.params.spec, snakemake.output[0])
