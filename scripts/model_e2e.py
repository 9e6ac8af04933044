from autoperfect import model_e2e

model_e2e.run(dict(snakemake.params.settings), snakemake.params.root, snakemake.output[0])
