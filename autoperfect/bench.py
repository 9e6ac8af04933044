"""The benchmark harness: interleaved timings, bootstrap intervals, allocator conditions.

It knows nothing about ops. A contender is a zero-argument callable doing the whole user call (for
MLX that includes `mx.eval`, so allocation and dispatch are paid). Contenders are timed in rounds,
in seeded orders balanced for which contender precedes which (`round_orders`), so drift (frequency,
noisy neighbours) and what a neighbour leaves in the caches hit all of them alike, and a speedup is
a ratio of samples taken in the same rounds, with a paired bootstrap interval.

On Linux CPUs glibc hands large freed blocks back to the OS, so every fresh large output page-faults
and allocation can cost more than the kernel (shared/notes/mlx.md). The allocator is fixed when a
process starts, so `run_condition` measures in a child process started under one named condition,
with every contender inside that same child.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Callable, Iterator, TextIO, TypeVar

import numpy as np

from . import THREAD_BINDING, run

BOOTSTRAP_RESAMPLES = 2000
STDERR_TAIL_CHARS = 4000
T = TypeVar("T")
# Rounds in which the host gave other guests more than this share of the CPU time are timed again ...
STEAL_RETAKE = 0.05
STEAL_RETAKES = 2  # ... at most this many times (least_stolen)

ALLOCATOR_CONDITIONS: dict[str, dict[str, str]] = {
    "warm": {"MALLOC_MMAP_THRESHOLD_": "1073741824", "MALLOC_TRIM_THRESHOLD_": "4294967296"},
    "default": {},
}


# ---------------------------------------------------------------------------------------------
# Timing


def time_interleaved(contenders: dict[str, Callable[[], object]], warmup: int, repeats: int,
                     seed: int, burst: int = 1) -> dict[str, list[float]]:
    """Per-round samples in seconds: each round times every contender once, in the orders of
    `round_orders`, so each contender comes right after each other one equally often. With `burst`,
    a sample is the mean of that many back-to-back calls of one contender: a cost only the first
    call after another contender's work pays (what its neighbour left in the caches) is then spread
    over the burst."""
    names = list(contenders)
    for _ in range(warmup):
        for name in names:
            contenders[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for order in round_orders(len(names), repeats, seed):
        for index in order:
            name = names[index]
            samples[name].append(time_burst(contenders[name], burst))
    return samples


def balanced_block(n: int) -> int:
    """Rounds in which each of n contenders follows each other one equally often (`round_orders`)."""
    return n if n % 2 == 0 else 2 * n


def round_orders(n: int, rounds: int, seed: int) -> list[list[int]]:
    """The order of each round: blocks of Williams squares, balanced for what the previous call
    leaves behind. A call pays for its neighbour's leftovers (dirty lines, an evicted input: 10-30%
    on a 16 MB row kernel, docs/experiments/2026-12-03c-cpu/after.py), so in shuffled rounds a
    seed that happens to put one variant after a heavy contender more often decides a close choice,
    the same way in every run. Within a block of `balanced_block(n)` rounds every contender takes
    every position once (twice for odd n) and comes right after each other contender once (twice);
    each block's contenders are relabelled and its rounds shuffled by the seeded generator. A last,
    partial block is as close to balanced as its rounds allow; the step from one round to the next,
    and what the call two before leaves, are not balanced. That is not enough to make a choice
    between variants within a few percent independent of the seed: mean/var's rows_v16 and shifted
    variants, 2-7% apart, were ranked the same way three times in the bench's balanced order and
    differently under three other seeds (docs/experiments/2026-12-04-cpu)."""
    rng = np.random.default_rng(seed)
    first, lo, hi = [0], 1, n - 1
    while lo <= hi:  # 0, 1, n-1, 2, n-2, ...: the differences of neighbours are all distinct mod n
        first.append(lo)
        lo += 1
        if lo <= hi:
            first.append(hi)
            hi -= 1
    square = [[(v + shift) % n for v in first] for shift in range(n)]
    if n % 2:
        square += [row[::-1] for row in square]
    orders: list[list[int]] = []
    while len(orders) < rounds:
        label = rng.permutation(n)
        orders += [[int(label[v]) for v in square[i]] for i in rng.permutation(len(square))]
    return orders[:rounds]


def host_seconds(call: Callable[[], object], n: int = 1000) -> float:
    """Seconds one call spends on the host building its MLX graph: `n` calls, their outputs
    evaluated after the clock stops (so the kernels' run is left out)."""
    import mlx.core as mx

    outs = []
    start = time.perf_counter()
    for _ in range(n):
        outs.append(call())
    took = (time.perf_counter() - start) / n
    mx.eval(outs)
    return took


def time_burst(call: Callable[[], object], burst: int) -> float:
    start = time.perf_counter()
    for _ in range(burst):
        call()
    return (time.perf_counter() - start) / burst


# ---------------------------------------------------------------------------------------------
# Statistics


def summarize(samples: list[float], seed: int) -> dict:
    """Median with a bootstrap 95% interval: the median resists the outliers a shared machine makes."""
    values = _as_samples(samples)
    rng = np.random.default_rng(seed)
    resampled = values[_bootstrap_indices(rng, len(values))]
    medians = np.median(resampled, axis=1)
    return {
        "median_s": float(np.median(values)),
        "ci95_s": _interval(medians),
        "samples": int(len(values)),
        "min_s": float(values.min()),
    }


def speedup(kernel: list[float], baseline: list[float], seed: int) -> dict:
    """Baseline median over kernel median, with an interval from resampling whole rounds.

    Samples at the same index were taken in the same round, so they are resampled together: the
    pairing cancels what a round shared (a slow moment of the machine) instead of counting it twice.
    """
    kern, base = _as_samples(kernel), _as_samples(baseline)
    if len(kern) != len(base):
        raise ValueError(f"paired samples differ in length: kernel {len(kern)}, baseline {len(base)}")
    rng = np.random.default_rng(seed)
    rounds = _bootstrap_indices(rng, len(kern))
    ratios = np.median(base[rounds], axis=1) / np.median(kern[rounds], axis=1)
    return {"median": float(np.median(base) / np.median(kern)), "ci95": _interval(ratios)}


def paired_intervals(statistics: Callable[[dict[str, float]], dict[str, float]],
                     samples: dict[str, list[float]], seed: int) -> dict[str, list[float]]:
    """Bootstrap 95% intervals of the named `statistics` of the contenders' medians (by name), whole
    rounds resampled together as `speedup` resamples its pairs: what a round shared (a slow moment
    of the machine) moves every contender in it alike."""
    values = {name: _as_samples(s) for name, s in samples.items()}
    if len({len(v) for v in values.values()}) != 1:
        raise ValueError(f"paired samples differ in length: {sorted((n, len(v)) for n, v in values.items())}")
    rounds = _bootstrap_indices(np.random.default_rng(seed), len(next(iter(values.values()))))
    medians = {name: np.median(v[rounds], axis=1) for name, v in values.items()}
    found = [statistics({name: float(m[b]) for name, m in medians.items()}) for b in range(len(rounds))]
    return {key: _interval(np.array([f[key] for f in found])) for key in found[0]}


def _as_samples(samples: list[float]) -> np.ndarray:
    values = np.asarray(samples, dtype=np.float64)
    if values.ndim != 1 or len(values) == 0:
        raise ValueError("need a non-empty list of timings")
    return values


def _bootstrap_indices(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))


def _interval(estimates: np.ndarray) -> list[float]:
    lo, hi = np.percentile(estimates, [2.5, 97.5])
    return [float(lo), float(hi)]


# ---------------------------------------------------------------------------------------------
# The machine


def measured_at() -> str:
    """When a measurement was taken: UTC, to the second (every measuring artifact records it)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def machine() -> dict:
    """What a measurement was taken on; versions come from package metadata, importing nothing.

    The load average is there because a busy machine lowers every figure: a reader can tell.
    """
    return {
        "load_1m": os.getloadavg()[0],
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "mlx": _version("mlx"),
        "numpy": _version("numpy"),
        "torch": _version("torch"),
    }


def cpu_times(stat: str = "/proc/stat") -> list[int] | None:
    """The machine's CPU time so far by kind, in ticks: Linux's `cpu` line of /proc/stat (user,
    nice, system, idle, iowait, irq, softirq, steal, ...); None where there is none."""
    try:
        with open(stat) as f:
            fields = f.readline().split()
    except OSError:
        return None
    if len(fields) < 9 or fields[0] != "cpu":
        return None
    return [int(v) for v in fields[1:9]]


def stolen_share(before: list[int] | None, after: list[int] | None) -> float | None:
    """Of the CPU time between two cpu_times() readings, the share in which the hypervisor ran
    other guests on this VM's vCPUs (steal): time a measurement's threads wanted and did not get.
    A busy host also takes memory bandwidth, which no counter here shows; so a low share does not
    clear a figure, a high one explains it. None without both readings or with no time between."""
    if before is None or after is None:
        return None
    spent = [b - a for a, b in zip(before, after)]
    total = sum(spent)
    return spent[7] / total if total > 0 else None


def stolen_during(work: Callable[[], T]) -> tuple[T, float | None]:
    """`work()`'s result and the host's share of the CPU time while it ran (stolen_share)."""
    before = cpu_times()
    result = work()
    return result, stolen_share(before, cpu_times())


def least_stolen(work: Callable[[], T], limit: float = STEAL_RETAKE, retakes: int = STEAL_RETAKES
                 ) -> tuple[T, float | None, list[float]]:
    """`work()` run until the host's share of the CPU time while it ran (stolen_during) is at
    most `limit`, run again at most `retakes` times: the result of the run with the least share, that
    share (None where the system does not say), and the shares of the runs set aside, in order."""
    runs = [stolen_during(work)]
    while len(runs) <= retakes and runs[-1][1] is not None and runs[-1][1] > limit:
        runs.append(stolen_during(work))
    kept = min(range(len(runs)), key=lambda i: runs[i][1] if runs[i][1] is not None else 0.0)
    return runs[kept][0], runs[kept][1], [share for i, (_, share) in enumerate(runs) if i != kept]


def available_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """The memory Linux says is free for new work (MemAvailable), in bytes; None where it says nothing."""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


# ---------------------------------------------------------------------------------------------
# Allocator conditions


def describe_condition(condition: str) -> str:
    """The sentence a report prints next to figures measured under `condition`."""
    variables = ALLOCATOR_CONDITIONS[condition]
    threads = ", ".join(f"{k}={v}" for k, v in sorted(THREAD_BINDING.items()))
    if not variables:
        return f"default glibc allocator; OpenMP threads bound to cores ({threads})"
    settings = ", ".join(f"{k}={v}" for k, v in sorted(variables.items()))
    return f"warm allocator: glibc keeps freed memory ({settings}); OpenMP threads bound to cores ({threads})"


def all_cores() -> dict[str, str]:
    """OpenMP on every core, one thread bound to each: Snakemake sets OMP_NUM_THREADS to a job's
    `threads`, which can exceed the machine's cores (--cores 4 on 2) or fall short of them (a
    1-thread judge job); the binding (autoperfect.THREAD_BINDING) applies to every contender alike."""
    return {"OMP_NUM_THREADS": str(os.cpu_count() or 1), **THREAD_BINDING}


def condition_environment(condition: str) -> dict[str, str]:
    """os.environ without any MALLOC_* setting, plus the condition's own, every core for OpenMP, and
    this package importable."""
    # the warm allocator may also come from autoperfect's own opt-in: each condition decides alone
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOC_") and k != "AUTOPERFECT_WARM_ALLOCATOR"}
    env.update(ALLOCATOR_CONDITIONS[condition])
    env.update(all_cores())
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return env


def child_command(module: str, *args: str) -> list[str]:
    """`python -m module args` for a child that imports this package (its root leads the PYTHONPATH
    of `condition_environment`), not an `autoperfect` its working directory holds (-P: the cwd is
    not put first on sys.path, as -m otherwise does)."""
    return [sys.executable, "-P", "-m", module, *args]


def run_condition(condition: str, target: str, payload: dict, timeout_s: float) -> dict:
    """Call `target(payload)` ("package.module:function") in a child started under `condition`."""
    if condition not in ALLOCATOR_CONDITIONS:
        raise ValueError(f"unknown allocator condition {condition!r}; known: {sorted(ALLOCATOR_CONDITIONS)}")
    command = child_command("autoperfect.bench", target, condition)
    try:
        child = run(command, input=json.dumps(payload), capture_output=True, text=True,
                    env=condition_environment(condition), timeout=timeout_s)
    except subprocess.TimeoutExpired as err:
        raise RuntimeError(f"{target} under {condition!r} ran past {timeout_s} s; stderr tail:\n"
                           f"{_tail(err.stderr)}") from err
    if child.returncode != 0:
        raise RuntimeError(f"{target} under {condition!r} exited with {child.returncode}; stderr tail:\n"
                           f"{_tail(child.stderr)}")
    try:
        result = json.loads(child.stdout)
    except json.JSONDecodeError:
        result = None
    if not isinstance(result, dict):
        raise RuntimeError(f"{target} under {condition!r} replied with no JSON object; stderr tail:\n"
                           f"{_tail(child.stderr)}")
    result["condition"] = describe_condition(condition)
    return result


def _tail(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return (text or "")[-STDERR_TAIL_CHARS:]


def probe(payload: dict) -> dict:
    """A target that echoes its payload and the MALLOC_* and OMP_* settings it sees: checks a
    condition arrives."""
    malloc = {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}
    omp = {k: v for k, v in os.environ.items() if k.startswith("OMP_")}
    return {"payload": payload, "malloc_env": malloc, "omp_env": omp}


def _check_condition(condition: str) -> None:
    """Refuse to measure when started by hand under an allocator other than the one named."""
    seen = {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}
    if seen != ALLOCATOR_CONDITIONS[condition]:
        raise SystemExit(f"condition {condition!r} needs MALLOC_* = {ALLOCATOR_CONDITIONS[condition]}, "
                         f"found {seen}; start it through autoperfect.bench.run_condition")


def _resolve(target: str) -> Callable[[dict], dict]:
    module_name, _, function_name = target.partition(":")
    if not module_name or not function_name:
        raise SystemExit(f"target must be 'package.module:function', got {target!r}")
    return getattr(importlib.import_module(module_name), function_name)


@contextlib.contextmanager
def _reply_channel() -> Iterator[TextIO]:
    """Keep stdout for the one JSON reply: anything else printed (by Python or C) goes to stderr."""
    sys.stdout.flush()
    reply = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    with reply:
        yield reply


def _child_main(argv: list[str]) -> None:
    if len(argv) != 2 or argv[1] not in ALLOCATOR_CONDITIONS:
        raise SystemExit(f"usage: python -m autoperfect.bench package.module:function "
                         f"{{{','.join(ALLOCATOR_CONDITIONS)}}} < payload.json")
    target, condition = argv
    _check_condition(condition)
    payload = json.load(sys.stdin)
    with _reply_channel() as reply:
        json.dump(_resolve(target)(payload), reply)


# ---------------------------------------------------------------------------------------------
# Atomic binary outputs (text and JSON go through autoperfect.artifacts)


@contextlib.contextmanager
def atomic_output(path: str) -> Iterator[str]:
    """Yield a temporary path beside `path`; it replaces `path` only if the block succeeds.

    For outputs another program writes by name (a compiler's library, matplotlib's PNG): readers
    (Snakemake, the report, another job) then see the old file or the whole new one.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    os.close(fd)
    try:
        yield temporary
        os.chmod(temporary, 0o644)  # mkstemp makes it private; an artifact is for everyone to read
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)


if __name__ == "__main__":
    _child_main(sys.argv[1:])
