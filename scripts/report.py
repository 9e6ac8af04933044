import os

from autoperfect import report

results = os.path.dirname(snakemake.output.md)
report.build_report(results, snakemake.params.ops, snakemake.params.backends, snakemake.output.md,
                    snakemake.output.plots)
