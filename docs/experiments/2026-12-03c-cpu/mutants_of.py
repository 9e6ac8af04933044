"""The mutants stage's planted bugs in one named variant of OP's kernel (the stage plants them in
the alphabetically first verified one, `rows` for row kernels): how many the judge rejects.
`python docs/experiments/2026-12-03c-cpu/mutants_of.py OP VARIANT` after `snakemake --cores 4 all`."""
import sys
import tempfile

import yaml

from autoperfect import artifacts, backends, mutants
from autoperfect.judge import Settings
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

op, variant = sys.argv[1], sys.argv[2]
config = yaml.safe_load(open("config.yaml"))
spec = parse_op(op, config["ops"][op])
be = backends.get("cpu")
kernels = [k for k in front(spec).kernels if k]
validation = artifacts.read_json(f"results/{op}/cpu/validation.json")
libraries = {k.name: validation["verified"][k.name][variant] for k in kernels}
sources = {n: be.source_of(lib).read_text() for n, lib in libraries.items()}
with tempfile.TemporaryDirectory() as tmp:
    result = mutants.evaluate(spec, "cpu", kernels, sources, libraries, Settings(**config["judge"]), tmp, 2)
print(op, variant, {k: result[k] for k in ("planted", "caught", "baseline_caught")})
for m in result["mutants"]:
    judge, allclose = m["judge"], m["baseline"]
    print(f"  {m['class']:26s} judge: {'caught' if judge['caught'] else 'MISSED'} ({judge['reason'][:70]}); "
          f"allclose: {'caught' if allclose['caught'] else 'missed'}")
