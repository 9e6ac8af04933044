"""first_call.py's last line (every run's record) as one line per function: median first-call time
per condition, the variants gated, and the model's choice timed in the fresh runs beside the fastest."""
import json
import sys

import numpy as np



def times(runs) -> str:
    return ", ".join(f"{r['first_call_s']:.2f}" for r in runs)


rows = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
for fn in dict.fromkeys(r["fn"] for r in rows):
    fresh = [r for r in rows if r["fn"] == fn and r["condition"] == "fresh"]
    model = [r for r in rows if r["fn"] == fn and r["condition"] == "model"]
    ranked = [r["ranked_by"] is not None for r in model]
    if not any(ranked):
        print(f"{fn}: {len(fresh[0]['medians'])} variants, none ranked (all gated in both conditions): "
              f"first call fresh {np.median([r['first_call_s'] for r in fresh]):.2f} s ({times(fresh)}), "
              f"with the cache {np.median([r['first_call_s'] for r in model]):.2f} s ({times(model)})")
        continue
    costs = []
    for m in model:  # the model's choice in each fresh run's own medians, over that run's fastest
        for f in fresh:
            costs.append(f["medians"][m["variant"]] / min(f["medians"].values()) - 1)
    print(f"{fn}: first call fresh {np.median([r['first_call_s'] for r in fresh]):.2f} s "
          f"({times(fresh)}), model "
          f"{np.median([r['first_call_s'] for r in model]):.2f} s ({times(model)}); "
          f"ranked by the model in {sum(ranked)} of {len(model)}; variants {len(fresh[0]['medians'])}, gated "
          f"{sorted({len(r['medians']) for r in model})}; chosen fresh {sorted({r['variant'] for r in fresh})}, "
          f"model {sorted({r['variant'] for r in model})}; the model's choice in the fresh runs' medians: "
          f"{np.median(costs):+.1%} median, {max(costs):+.1%} worst over their fastest")
