"""Every CUDA schedule of the row ops, rendered for 3 rows of 1031 and run by the SIMT emulator
(tests/simt_emulator.py), through the judge's "offset" check: the GPU side of the class, where no GPU
is at hand.

    python docs/experiments/2026-12-05d-cpu/emulated_offset.py
"""

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, "tests")

from autoperfect import judge  # noqa: E402
from autoperfect.backends import cuda  # noqa: E402
from autoperfect.pipeline import front, program  # noqa: E402
from autoperfect.spec import seed_for  # noqa: E402
from op_table import config_specs  # noqa: E402
from simt_emulator import Emulated  # noqa: E402

SPECS = config_specs()


def main() -> None:
    work = Path(tempfile.mkdtemp())
    for name in ("mean_var", "layernorm", "rmsnorm", "add_rmsnorm", "softmax"):
        spec = SPECS[name].with_shapes({i.name: (3, 1031)[-len(i.shape):] for i in SPECS[name].inputs})
        f = front(spec)
        (k,) = [k for k in f.kernels if k is not None]
        exact = all(n.op in judge.EXACT for n in f.canonical.nodes)
        for s in cuda.schedules_for(k):
            prog = program(f, {k.name: Emulated(k, cuda.render(k, s), "cuda", work)})
            v = judge.check_shape(f, prog, spec, "offset", np.random.default_rng(seed_for(name, "offset")), exact)
            print(name, s.name, "passed" if v["passed"] else f"failed: {v['reason']}", flush=True)


if __name__ == "__main__":
    main()
