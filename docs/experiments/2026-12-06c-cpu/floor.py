"""The one-element MLX op (the benchmark's dispatch floor) back to back and after a sleep of 2 and
20 ms: median and best microseconds."""
import time, numpy as np, mlx.core as mx
a = mx.ones((1,)); mx.eval(a)
for gap in (0, 0.002, 0.02):
    ts=[]
    for r in range(60):
        if gap: time.sleep(gap)
        t=time.perf_counter(); b = a + 1; mx.eval(b); ts.append(time.perf_counter()-t)
    print(f"gap {gap*1e3:5.1f} ms: one-element add median {np.median(ts)*1e6:.1f} us min {np.min(ts)*1e6:.1f}")
