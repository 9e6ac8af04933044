"""Quick timing of verified drafts against the champion, so the loop knows which to keep.

Like the benchmark (bench.py, contenders.py) it times the whole op as a user calls it, contenders
interleaved in shuffled rounds, under the warm allocator, in a child process (a kernel that
misbehaves under timing ends the timing, not the loop); a speedup is the paired ratio of medians
with a bootstrap interval. Unlike the benchmark it has no baselines and few rounds.
"""

from __future__ import annotations

from .. import backends, bench, contenders
from ..kernel_ir import KernelIR
from ..pipeline import front, program
from ..spec import OpSpec, seed_for

WARMUP = 2
CONTROL = "champion-again"


def measure(payload: dict) -> dict:
    """Child entry point: payload has spec, backend, kernel, fixed {kernel: library} for the op's
    other kernels, libraries {label: library} for this one, repeats and seed."""
    spec = OpSpec.from_json(payload["spec"])
    be = backends.get(payload["backend"])
    f = front(spec)
    _, arrays = contenders.inputs_for(spec)
    kernels = {k.name: k for k in f.kernels if k is not None}
    fixed = {name: be.Kernel(kernels[name], lib) for name, lib in payload["fixed"].items()}
    mine = kernels[payload["kernel"]]
    calls = {label: contenders.evaluated(program(f, {**fixed, mine.name: be.Kernel(mine, lib)}), arrays)
             for label, lib in payload["libraries"].items()}
    samples = bench.time_interleaved(calls, WARMUP, payload["repeats"], payload["seed"])
    return {"samples": samples, "bytes_moved": contenders.ideal_bytes(f)}


def compare(spec: OpSpec, backend: str, kernel: KernelIR, fixed: dict[str, str], libraries: dict[str, str],
            champion: str, repeats: int, timeout_s: float) -> dict[str, dict]:
    """A profile per label: median, interval, GB/s of the op's ideal traffic and, for every label
    but `champion`, its speedup over the champion. The champion is also timed a second time as
    CONTROL: its "speedup" over itself is the timer's own noise, which a claimed speedup must
    clear (see `beats`). Raises RuntimeError when the child fails."""
    seed = seed_for(spec.name, kernel.name, "llm-timing")
    payload = {"spec": spec.to_json(), "backend": backend, "kernel": kernel.name, "repeats": repeats,
               "fixed": {k: v for k, v in fixed.items() if k != kernel.name},
               "libraries": {**libraries, CONTROL: libraries[champion]}, "seed": seed}
    result = bench.run_condition("warm", "autoperfect.generate.timing:measure", payload, timeout_s)
    samples = result["samples"]
    profiles = {}
    for label, s in samples.items():
        p = bench.summarize(s, seed)
        p["gbps"] = result["bytes_moved"] / p["median_s"] / 1e9
        if label != champion:
            p["speedup"] = bench.speedup(s, samples[champion], seed)
        profiles[label] = p
    return profiles


def beats(profiles: dict[str, dict], label: str) -> bool:
    """Whether `label` is surely faster than the champion: its speedup's whole 95% interval lies
    above 1 and above the interval of the champion against itself (a noisy timer claims nothing)."""
    noise = profiles[CONTROL]["speedup"]["ci95"][1]
    return profiles[label]["speedup"]["ci95"][0] > max(1.0, noise)
