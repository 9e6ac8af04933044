"""runtime.gate on a saved request (capture.py), in this process, timed; each kernel's count of
variants passed. Run from the checkout whose gate is timed:
    python gate_time.py REQUEST.json"""
import json
import sys
import time

from autoperfect import runtime

request = json.load(open(sys.argv[1]))
t = time.perf_counter()
verdicts = runtime.gate(request)["verdicts"]
print(f"gate {time.perf_counter() - t:.2f} s, passed",
      {k: f"{sum(v['passed'] for v in d.values())}/{len(d)}" for k, d in verdicts.items()}, flush=True)
