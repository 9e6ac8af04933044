from autoperfect import stages

stages.generate(snakemake.input[0], snakemake.wildcards.backend, snakemake.params.provider, snakemake.output[0])
