"""Does a torch op slow the next call through threads it leaves spinning? The streaming copy over 12
sets of 32 MB, after nothing or a torch softmax over 16 MB, then a sleep of 0-50 ms; and the CPU
time every thread of the process takes in the 0.2 s after one torch call."""
import os, time, numpy as np, torch
from autoperfect import roofline, contenders
k = roofline.load_kernels(roofline.DEFAULT_CACHE_DIR)
n = 32 * 2**20 // 8
S = 12
sets = [(contenders.mlx_ones(n), contenders.mlx_ones(n)) for _ in range(S)]
calls = [lambda a=a, b=b: k.copy_nt(a.ctypes.data, b.ctypes.data, n) for a, b in sets]
ta = torch.ones(4096, 1024)
tsm = lambda: torch.softmax(ta, -1)
res = {}
i = 0
def threads_cpu():
    tot = 0
    for t in os.listdir("/proc/self/task"):
        f = open(f"/proc/self/task/{t}/stat").read().split(")")[1].split()
        tot += int(f[11]) + int(f[12])
    return tot
for rnd in range(20):
    for pre in ("none", "torch"):
        for gap in (0, 1e-3, 5e-3, 20e-3, 50e-3):
            calls[i % S](); i += 1
            if pre == "torch": tsm()
            if gap: time.sleep(gap)
            t = time.perf_counter(); calls[i % S](); res.setdefault((pre, gap), []).append(time.perf_counter() - t); i += 1
c0 = threads_cpu(); w0 = time.perf_counter(); tsm(); time.sleep(0.2); c1 = threads_cpu(); print("CPU ticks over 0.2 s after one torch call:", c1 - c0, "(100/s per fully busy thread)")
c0 = threads_cpu(); time.sleep(0.2); c1 = threads_cpu(); print("CPU ticks over 0.2 s with nothing:", c1 - c0)
for key, ts in res.items():
    print(key, f"median {np.median(ts)*1e3:.3f} ms  {8*n/np.median(ts)/1e9:5.1f} GB/s")
