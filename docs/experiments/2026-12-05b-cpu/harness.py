"""What pool_ab.py and share_ab.py (as ../2026-12-04f-cpu/dispatch_ab.py before them) set up alike,
from a pipeline clone's root after `snakemake --cores 4 all`: OP's spec, the CPU backend, its front,
its one kernel and the variant the bench chose, and the input sets with the neighbours the native
op is timed beside (MLX eager and torch.compile, as a user pays for them)."""
import json

import yaml

from autoperfect import backends, interp
from autoperfect import contenders as C
from autoperfect.pipeline import front
from autoperfect.spec import parse_op


def chosen(op: str):
    """(spec, backend, front, kernel, the chosen variant's name) of OP."""
    spec = parse_op(op, yaml.safe_load(open("config.yaml"))["ops"][op])
    f = front(spec)
    k = [k for k in f.kernels if k][0]
    return spec, backends.get("cpu"), f, k, json.load(open(f"results/{op}/cpu/bench.json"))["variants"][k.name]["chosen"]


def neighbours(spec, f, count: int):
    """`count` input sets and the calls of MLX eager and torch.compile on a set."""
    sets = C.input_sets(spec, f, count, C.has_torch())
    ref = interp.evaluate(f.traced, list(sets[0].xs), "float64")
    torch_fns, _ = C.torch_calls(f, sets[0].tensors, ref, {})
    calls = C.user_calls(spec, f, torch_fns, {}, ref, sets[0])
    return sets, {n: c for n, c in calls.items() if n in ("mlx_eager", "torch_compile")}
