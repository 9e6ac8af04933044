"""The schedule model's choices, scored leave one kernel out on pipeline runs' variant medians:
knobs alone (autoperfect.schedule_model) against knobs times the kernel's features, for a few ridge
penalties and numbers of variants gated first.

    python features.py /tmp/run36 /tmp/run37 /tmp/run38     (each a finished pipeline run's checkout)
"""
import glob
import json
import math
import sys

import numpy as np

from autoperfect import backends, schedule_model as sm
from autoperfect.ops import REDUCE, ULP_BOUND
from autoperfect.stages import load_kernels

KERNEL_FEATURES = ("one", "row", "log_elements", "log_row", "functions", "reductions")


def kernel_features(k):
    dims = k.launch.dims
    row = dims[-1] if k.kind == "row" else 1
    return np.array([1.0, float(k.kind == "row"), math.log2(max(1, math.prod(dims))) / 24,
                     math.log2(max(1, row)) / 12, float(sum(i.op in ULP_BOUND for i in k.body)),
                     float(sum(i.op in REDUCE for i in k.body))])


def with_products(backend, k):
    """Every knob times each of the kernel's features (an outer product)."""
    kf, names, rows = kernel_features(k), (), {}
    for s in backends.get(backend).schedules_for(k):
        knob_names, kv = sm.knobs(s)
        names = tuple(f"{a}*{b}" for a in knob_names for b in KERNEL_FEATURES)
        rows[s.name] = np.outer(kv, kf).ravel()
    return names, rows


timed = []
for run in sys.argv[1:]:
    for b in sorted(glob.glob(f"{run}/results/*/cpu/bench.json")):
        op = b.split("/")[-3]
        ks = {k.name: k for k in load_kernels(f"{run}/results/{op}/kernels.json")}
        for kn, v in json.load(open(b))["variants"].items():
            if len(v["median_s"]) > 1:
                timed.append(sm.Timed(ks[kn], tuple(ks[kn].launch.dims), v["median_s"]))

knobs_only = sm.variant_features
for form, features in (("knobs", knobs_only), ("knobs x kernel", with_products)):
    sm.variant_features = features
    for ridge in (0.01, 0.1, 1, 10):
        sm.RIDGE = ridge
        for top in (1, 2, 3, 4):
            s = sm.leave_one_out("cpu", timed, top)["summary"]
            print(f"{form}, ridge {ridge}, first {top}: fastest among them in {s['fastest_in_top']} of "
                  f"{s['launches']}, regret mean {s['mean_regret']:.1%} worst {s['worst_regret']:.1%}, random "
                  f"pair {s['mean_random_pair_regret']:.1%}, rank correlation {s['mean_spearman']:.2f}")
