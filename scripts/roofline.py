from autoperfect import artifacts, roofline

artifacts.write_json(snakemake.output[0], roofline.measure())
