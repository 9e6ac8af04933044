"""The in-cache figure (bench.json's `in_cache.seconds`) measured again and again for an op's chosen
kernels, in turns, each in a child of its own under the warm condition: as the bench stage measures
it (contenders.measure_in_cache: the team's two threads over both L2s' rows), and on one thread over
one L2's rows, shared out over the team (`one_thread` below: the candidate replacement, measured
and not kept).

    ROUNDS=5 python docs/experiments/2026-12-05d-cpu/incache_steady.py rmsnorm layernorm ...

from a pipeline clone's root after `snakemake --cores 4 all` (the chosen variants are read from
results/{op}/cpu/bench.json), PYTHONPATH at that clone, OMP_PLACES=cores OMP_PROC_BIND=close.
Prints each figure in ms and its range.
"""

import ctypes
import json
import os
import sys
from pathlib import Path
from unittest import mock

import yaml

HERE = Path(__file__).resolve().parent


def one_thread(payload: dict) -> dict:
    """contenders.in_cache on this thread alone (OpenMP teams one thread wide before any region),
    the cut sized for one thread's share of the L2s, half the cut timed wherever it exists, the op's
    time divided by the team the kernels would have run."""
    from autoperfect import backends, contenders, roofline
    from autoperfect.pipeline import front
    from autoperfect.spec import OpSpec, seed_for

    gomp = ctypes.CDLL("libgomp.so.1")
    team = gomp.omp_get_max_threads()
    gomp.omp_set_num_threads(1)
    spec = OpSpec.from_json(payload["spec"])
    be = backends.get(payload["backend"])
    f = front(spec)
    loaded = {k.name: be.Kernel(k, payload["chosen"][k.name]) for k in f.kernels if k is not None}
    l2 = roofline.cache_bytes(level="2")
    with mock.patch.object(roofline, "cache_bytes", lambda level=None: l2 // team), \
            mock.patch.object(contenders, "_runs_threaded",
                              lambda spec, d: contenders.scaled_shapes(spec, d) is not None):
        record = contenders.in_cache(spec, f, loaded, seed_for(spec.name, "bench-order"))
    return {"in_cache": {**record, "seconds": record["seconds"] / team, "team": team}}


def main() -> None:
    from autoperfect import bench
    from autoperfect.spec import parse_ops

    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    specs = parse_ops(yaml.safe_load(Path("config.yaml").read_text())["ops"])
    rounds = int(os.environ.get("ROUNDS", "5"))
    targets = {"two threads (the bench stage's)": "autoperfect.contenders:measure_in_cache",
               "one thread, shared out": "incache_steady:one_thread"}
    for op in sys.argv[1:]:
        measured = json.loads(Path(f"results/{op}/cpu/bench.json").read_text())
        verified = json.loads(Path(f"results/{op}/cpu/validation.json").read_text())["verified"]
        chosen = {k: verified[k][v["chosen"]] for k, v in measured["variants"].items()}
        payload = {"spec": specs[op].to_json(), "backend": "cpu", "chosen": chosen}
        got = {label: [] for label in targets}
        for _ in range(rounds):
            for label, target in targets.items():
                got[label].append(1e3 * bench.run_condition("warm", target, payload, 600)["in_cache"]["seconds"])
        for label, ms in got.items():
            print(f"{op} {label}: {' '.join(f'{m:.3f}' for m in ms)} ms (range {min(ms):.3f}-{max(ms):.3f}, "
                  f"max/min {max(ms) / min(ms):.2f})", flush=True)


if __name__ == "__main__":
    main()
