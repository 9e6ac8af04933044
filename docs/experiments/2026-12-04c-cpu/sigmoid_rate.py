"""The roofline's sigmoid rate (roofline.measure_functions: the judge's one-op probe kernel over
all cores, arguments in [-8, 8], every schedule, the best kept) with the C renderer's template before
2026-12-04c (two exps, two divisions) and now (one of each), alternating, five times each.
    python docs/experiments/2026-12-04c-cpu/sigmoid_rate.py      (from the repository root)"""
from autoperfect import roofline
from autoperfect.backends import cfamily
from autoperfect.ops import Op, ULP_BOUND

OLD = "({0} >= 0.0f ? 1.0f / (1.0f + expf(-{0})) : expf({0}) / (1.0f + expf({0})))"
NEW = cfamily.UNARY[Op.SIGMOID]
only = {Op.SIGMOID: ULP_BOUND[Op.SIGMOID]}
ULP_BOUND.clear(); ULP_BOUND.update(only)  # measure_functions walks ULP_BOUND's functions
for _ in range(5):
    for name, template in (("two exps", OLD), ("one exp", NEW)):
        cfamily.UNARY[Op.SIGMOID] = template
        r = roofline.measure_functions(1 << 19, 20)["rates"]["sigmoid"]
        print(f"{name}: {r['per_second'] / 1e9:.2f} G/s ({r['schedule']})")
