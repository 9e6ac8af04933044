from autoperfect import stages

i = snakemake.input
stages.cache_stage(i.kernels, i.validation, i.bench, snakemake.params.root, snakemake.output[0])
