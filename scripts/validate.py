from autoperfect import stages

stages.validate(snakemake.params.spec, snakemake.input.kernels, snakemake.input.compiled,
                dict(snakemake.params.judge), snakemake.output[0], snakemake.input.llm or None)
