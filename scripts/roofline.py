import os

from autoperfect import artifacts, bench

os.environ.update(bench.all_cores())  # before OpenMP starts: the ceilings use every core
from autoperfect import roofline  # noqa: E402

artifacts.write_json(snakemake.output[0], roofline.measure(quick=snakemake.params.quick))
