import os

from autoperfect import report

out = snakemake.output
plots = {name: getattr(out, name) for name in report.PLOTS}
plots_dir = os.path.dirname(plots["speedup"])
assert all(path == os.path.join(plots_dir, f"{name}.png") for name, path in plots.items()), plots
report.build_report(os.path.dirname(out.md), snakemake.params.ops, snakemake.params.backends, out.md,
                    plots_dir, out.html)
