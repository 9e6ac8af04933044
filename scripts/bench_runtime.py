from autoperfect import bench_runtime
from autoperfect.spec import OpSpec

p = snakemake.params
bench_runtime.run([OpSpec.from_json(op) for op in p.ops], dict(p.settings), p.root, snakemake.output[0])
