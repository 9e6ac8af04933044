from autoperfect import stages

stages.lower(snakemake.input.canonical, snakemake.input.regions, snakemake.output[0])
