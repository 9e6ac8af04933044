from autoperfect import stages

stages.fuse_stage(snakemake.input[0], snakemake.output[0])
