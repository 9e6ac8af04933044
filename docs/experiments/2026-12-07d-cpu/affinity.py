"""The CPUs a process started by autoperfect's runtime may use, after the first kernel's library has
loaded under bound OpenMP threads (OMP_PROC_BIND=close OMP_PLACES=cores, as the benchmarks and
AUTOPERFECT_BIND_THREADS=1 set them): the main thread's, a thread's started after, and a child's
started from each, plainly and inside autoperfect.unpinned(). Then the LayerNorm backward's gate
request (capture.py) sent to the gate's child from that pinned main thread, plainly and unpinned,
alternating, ROUNDS times each.
    OMP_PROC_BIND=close OMP_PLACES=cores python affinity.py REQUEST.json [ROUNDS]"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import mlx.core as mx
import numpy as np

import autoperfect
from autoperfect import judge

CHILD = [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]


def rms(x, w):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


print("main thread at import:", sorted(os.sched_getaffinity(0)))
jitted = autoperfect.jit(rms, cache_dir=tempfile.mkdtemp())
mx.eval(jitted(mx.array(np.ones((512, 1024), np.float32)), mx.ones((1024,))))
print("main thread after a first call:", sorted(os.sched_getaffinity(0)))
seen = {}
worker = threading.Thread(target=lambda: seen.update(thread=sorted(os.sched_getaffinity(0)),
                                                     child=subprocess.run(CHILD, capture_output=True, text=True).stdout.strip()))
worker.start()
worker.join()
print("a thread started after:", seen["thread"], "its child:", seen["child"])
print("a child of the main thread:", subprocess.run(CHILD, capture_output=True, text=True).stdout.strip())
with autoperfect.unpinned():
    print("... started inside unpinned():", subprocess.run(CHILD, capture_output=True, text=True).stdout.strip())
print("main thread after unpinned():", sorted(os.sched_getaffinity(0)))

request = json.load(open(sys.argv[1]))
for n in range(int(sys.argv[2]) if len(sys.argv) > 2 else 2):
    for label, start in (("pinned", subprocess.run), ("unpinned", autoperfect.run)):
        autoperfect.judge.run = start  # how run_child starts its child
        t = time.perf_counter()
        reply = judge.run_child("autoperfect.runtime", request, judge.Settings(timeout_s=600), request["backend"])
        print(f"gate child, {label}: {time.perf_counter() - t:.2f} s", "verdicts" in reply, flush=True)
