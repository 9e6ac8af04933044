from autoperfect import stages

stages.schedule_model_stage(snakemake.params.ops, snakemake.params.backends, "results", snakemake.output[0])
