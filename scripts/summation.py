from autoperfect import summation

summation.run(snakemake.output[0])
