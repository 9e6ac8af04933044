"""A learned cost model that ranks a kernel's schedule variants before any of them is timed.

The pipeline times every verified variant of every kernel it benchmarks; what it measured (the
cache's `timings/<kernel>.json`, the pipeline's bench.json) is this model's training set. The
runtime meets kernels nobody timed (a user's function at its first call): there the model, fitted on
the other kernels' timings on this machine, orders the variants so the gate judges and times the
best few first (runtime.Jit._compile), the rest only if none of those passes.

What it learns: by how much each schedule knob (a field of the backend's Schedule: vector width,
streaming stores, prefetching, split reductions, our own functions, ...) changes a variant's time.
A variant's features are its knobs; the target is the log of its median. Times of different kernels
are not compared: within each kernel's launch, features and targets are taken about their mean, so
the model fits only the differences between one launch's variants (a ranking), never the launch's
own cost. Ridge regression (one solve, deterministic); the penalty keeps a knob no launch varied at
zero. Knobs only, no products with the kernel's features (row or elementwise, size, row length,
functions, reductions): with the seven kernels the pipeline times, such products ranked worse than
a random pair (runs 36-38 on the AMD EPYC VM, leave one out, the first two gated: the fastest among
them in 6-8 of 21 launches, mean regret 14-21%, a random pair's 12.6%; knobs alone, 10-12 of 21
and 3.5-4.3%; the first four: 13 of 18 and 1.2%, worst 9.5%). RIDGE and TOP were chosen on those
same figures (docs/experiments/2026-12-06d-cpu/features.py); the pipeline scores the model again on
each run's own medians (results/schedule_model.json).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Iterable, Mapping, Sequence

import numpy as np

from . import backends
from .kernel_ir import KernelIR

RIDGE = 0.1        # the penalty on the weights (features are of order one)
TOP = 4            # the variants the runtime gates first where the model ranks them
MIN_KERNELS = 3    # a model fitted on fewer kernels than this is not used


@dataclass(frozen=True)
class Timed:
    """One kernel's variants timed at one launch: what the model learns from and is scored on."""
    kernel: KernelIR
    dims: tuple[int, ...]
    median_s: Mapping[str, float]


def knobs(schedule) -> tuple[tuple[str, ...], np.ndarray]:
    """A schedule's knobs as numbers: a flag as 0 or 1, a count as whether it is set and its log2
    (every field of the backend's Schedule but its name, so a new knob is learned without code here)."""
    names, values = [], []
    for f in fields(schedule):
        v = getattr(schedule, f.name)
        if f.name == "name" or not isinstance(v, (bool, int, float)):
            continue
        if isinstance(v, bool):
            names.append(f.name)
            values.append(float(v))
        else:
            names += [f.name, f"{f.name}_log2"]
            values += [float(v > 0), math.log2(1 + max(0.0, float(v))) / 16]
    return tuple(names), np.array(values)


def variant_features(backend: str, k: KernelIR) -> tuple[tuple[str, ...], dict[str, np.ndarray]]:
    """Feature names and each of `k`'s schedule variants' features."""
    names, rows = (), {}
    for s in backends.get(backend).schedules_for(k):
        names, rows[s.name] = knobs(s)
    return names, rows


@dataclass(frozen=True)
class Model:
    backend: str
    names: tuple[str, ...]
    weights: tuple[float, ...]
    kernels: tuple[str, ...]   # the kernels it was fitted on
    launches: int              # their timed launches
    timings: int               # their variants' medians
    # the features no timed launch varied (their weights are the ridge's zero), each with the values
    # its timed variants had
    fixed: tuple[tuple[str, tuple[float, ...]], ...] = ()

    def predict(self, x: np.ndarray) -> np.ndarray:
        return x @ np.asarray(self.weights)

    def rank(self, k: KernelIR, variants: Sequence[str]) -> list[str] | None:
        """`variants` fastest first by the model; None where any of them is no schedule of the
        backend's (a language model's draft) or the features differ from the fitted ones."""
        names, rows = variant_features(self.backend, k)
        if names != self.names or any(v not in rows for v in variants):
            return None
        predicted = {v: float(self.predict(rows[v])) for v in variants}
        return sorted(variants, key=lambda v: predicted[v])  # stable: ties keep the given order

    def unseen(self, k: KernelIR, variants: Sequence[str]) -> list[str]:
        """Those of `variants` that set a knob no launch the model was fitted on varied to a value
        none of its variants had (a column variant, where every timed kernel reduced its last axis):
        the model has learned nothing of them (the ridge leaves such a weight at zero, which ranks
        them as if the knob were as before), so the runtime gates them beside its first TOP."""
        names, rows = variant_features(self.backend, k)
        column = {n: i for i, n in enumerate(names)}
        return [v for v in variants if v in rows
                and any(rows[v][column[n]] not in seen for n, seen in self.fixed if n in column)]

    def to_json(self) -> dict:
        order = np.argsort(-np.abs(np.asarray(self.weights)), kind="stable")
        return {"backend": self.backend, "kernels": list(self.kernels), "launches": self.launches,
                "timings": self.timings, "ridge": RIDGE,
                "largest_weights": [[self.names[i], round(self.weights[i], 4)] for i in order[:12]]}


def _positive(s) -> bool:
    return isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) and s > 0


@dataclass(frozen=True)
class _Launch:
    """A timed launch as the fit takes it: its variants' features, and their log medians about
    their mean."""
    kernel: str
    names: tuple[str, ...]
    features: np.ndarray
    y: np.ndarray

    @property
    def x(self) -> np.ndarray:
        """The features about their means."""
        return self.features - self.features.mean(axis=0)


def _launches(backend: str, timed: Iterable[Timed]) -> list[_Launch]:
    """Every launch with two or more of its variants timed; each kernel's features are
    computed once however many launches it was timed at."""
    features, found = {}, []
    for t in timed:
        if t.kernel.name not in features:
            features[t.kernel.name] = variant_features(backend, t.kernel)
        names, rows = features[t.kernel.name]
        known = [v for v in sorted(t.median_s) if v in rows and _positive(t.median_s[v])]
        if len(known) < 2:
            continue
        x = np.stack([rows[v] for v in known])
        y = np.log([t.median_s[v] for v in known])
        found.append(_Launch(t.kernel.name, names, x, y - y.mean()))
    return found


def fit(backend: str, timed: Iterable[Timed], min_kernels: int = MIN_KERNELS) -> Model | None:
    """The ridge fit over every launch with two or more of its variants timed; None where those
    span fewer than `min_kernels` kernels (too little to learn a knob's effect from)."""
    return _fit(backend, _launches(backend, timed), min_kernels)


def _fit(backend: str, launches: Sequence[_Launch], min_kernels: int = MIN_KERNELS) -> Model | None:
    used = [g for g in launches if g.names == launches[0].names] if launches else []
    kernels = sorted({g.kernel for g in used})
    if len(kernels) < min_kernels:
        return None
    x, y = np.concatenate([g.x for g in used]), np.concatenate([g.y for g in used])
    w = np.linalg.solve(x.T @ x + RIDGE * np.eye(x.shape[1]), x.T @ y)
    raw = np.concatenate([g.features for g in used])
    fixed = tuple((n, tuple(sorted(set(raw[:, i].tolist())))) for i, n in enumerate(used[0].names)
                  if not np.any(x[:, i] != 0))
    return Model(backend, used[0].names, tuple(float(v) for v in w), tuple(kernels), len(used), len(y), fixed)


def _ranks(values: Sequence[float]) -> np.ndarray:
    return np.argsort(np.argsort(np.asarray(values), kind="stable"), kind="stable").astype(float)


def score(order: Sequence[str], median_s: Mapping[str, float], top: int = TOP) -> dict:
    """How an order of the timed variants would have done: whether the fastest is among its first
    `top`, the fastest of those over the fastest of all (what gating only them costs), Spearman's
    rank correlation with the measured order, and the same regret for a random pair (its mean)."""
    timed = [v for v in order if v in median_s]
    fastest = min(timed, key=median_s.get)
    best, first = median_s[fastest], timed[:top]
    pairs = [min(median_s[a], median_s[b]) / best for i, a in enumerate(timed) for b in timed[i + 1:]]
    rho = float(np.corrcoef(_ranks(range(len(timed))), _ranks([median_s[v] for v in timed]))[0, 1])
    return {"order": timed, "fastest": fastest, "fastest_in_top": fastest in first,
            "regret": min(median_s[v] for v in first) / best - 1,
            "random_pair_regret": float(np.mean(pairs)) - 1 if pairs else 0.0, "spearman": rho}


def leave_one_out(backend: str, timed: Sequence[Timed], top: int = TOP) -> dict:
    """Each kernel's launches with more than `top` variants timed (the others have nothing to rank)
    ranked by the model fitted on the other kernels' timings; summary: how often the fastest variant
    is among the first `top`, the mean and worst regret (the fastest of the first `top` over the
    fastest, minus one), beside a random pair's mean regret."""
    rows, launches = [], _launches(backend, timed)
    for name in sorted({t.kernel.name for t in timed}):
        model = _fit(backend, [g for g in launches if g.kernel != name])
        for t in (t for t in timed if t.kernel.name == name):
            variants = [v for v in t.median_s if _positive(t.median_s[v])]
            order = model.rank(t.kernel, variants) if model is not None and len(variants) > top else None
            if order is None:
                continue
            rows.append({"kernel": name, "dims": list(t.dims), "trained_on": len(model.kernels),
                         **score(order, t.median_s, top)})
    summary = {"launches": len(rows), "top": top}
    if rows:
        summary.update({
            "fastest_in_top": sum(r["fastest_in_top"] for r in rows),
            "mean_regret": float(np.mean([r["regret"] for r in rows])),
            "worst_regret": max(r["regret"] for r in rows),
            "mean_random_pair_regret": float(np.mean([r["random_pair_regret"] for r in rows])),
            "mean_spearman": float(np.mean([r["spearman"] for r in rows]))})
    return {"summary": summary, "launches": rows}
