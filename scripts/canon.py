from autoperfect import stages

stages.canon(snakemake.input[0], snakemake.output[0])
