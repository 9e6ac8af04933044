"""SiLU (configs/unseen.yaml) rendered with the sigmoid template before 2026-12-04c and now, for
docs/experiments/2026-12-03b-cpu/ab_two.py. After
    snakemake --cores 4 --configfile configs/unseen.yaml --replace-workflow-config results/silu/cpu/bench.json
run from the repository root
    python docs/experiments/2026-12-04c-cpu/silu_sources.py OUTDIR
which writes OUTDIR/old.c, OUTDIR/new.c (the `libmvec` candidate, the choice of that bench run) and
OUTDIR/config.yaml (silu alone, since ab_two reads the op from ./config.yaml); then from OUTDIR
    PYTHONPATH=$REPO python $REPO/docs/experiments/2026-12-03b-cpu/ab_two.py silu old.c new.c"""
import glob, os, re, sys

import yaml

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
new = open(glob.glob("results/silu/cpu/candidates/*.libmvec.c")[0]).read()
m = re.search(r"\(\((v\d+) >= 0\.0f \? 1\.0f : expf\(-fabsf\(\1\)\)\) / \(1\.0f \+ expf\(-fabsf\(\1\)\)\)\)", new)
v = m.group(1)
old = new.replace(m.group(0), f"({v} >= 0.0f ? 1.0f / (1.0f + expf(-{v})) : expf({v}) / (1.0f + expf({v})))")
open(os.path.join(out, "old.c"), "w").write(old)
open(os.path.join(out, "new.c"), "w").write(new)
silu = yaml.safe_load(open("configs/unseen.yaml"))["ops"]["silu"]
open(os.path.join(out, "config.yaml"), "w").write(yaml.safe_dump({"ops": {"silu": silu}}))
