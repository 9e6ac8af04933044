"""The roofline's streaming copy over 134 MB arrays (268 MB moved), one call every 0.25 s for SECONDS
(default 120): GB/s against time, to see how the machine's memory bandwidth moves from moment to moment."""
import sys, time, numpy as np
from autoperfect import roofline
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
n = 32 << 20
a, b = np.full(n, 1.0, np.float32), np.full(n, 1.0, np.float32)
call = roofline._stream_call(k, "copy_nt", a, b)
call()
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 120
start, rates = time.time(), []
while time.time() - start < seconds:
    s = time.perf_counter(); call(); rates.append(8 * n / (time.perf_counter() - s) / 1e9)
    time.sleep(0.25)
r = np.array(rates)
print(f"{len(r)} calls over {seconds:.0f} s: min {r.min():.1f}, p10 {np.percentile(r, 10):.1f}, median {np.median(r):.1f}, "
      f"p90 {np.percentile(r, 90):.1f}, max {r.max():.1f} GB/s")
print("per 10 s:", " ".join(f"{np.median(r[i:i + 40]):.0f}" for i in range(0, len(r), 40)))
