"""The judge: decides whether a compiled op is correct. Nothing a generator writes is trusted.

For each shape (the spec's and others that keep its structure: one row, odd lengths, lengths that
are no multiple of any vector width) and each input class, the op runs with poisoned, fenced
outputs (see program.run_guarded) and every output element is compared with the float64 answer key
of the *traced* graph, within a bound derived from the problem (bounds.py). Ops made only of exact
operations must also match a step-by-step reference in the op's own dtype value for value. Every
kernel runs twice (nondeterminism), and hidden draws, fresh each run, are checked last and never
written down. Candidates run in a child process, so a crash or a hang is a verdict, not the end.
"""

from __future__ import annotations

import json
import math
import os
import resource
import secrets
import signal
import subprocess
import sys
from dataclasses import dataclass

import numpy as np

from . import backends, bench, dtypes, interp
from .bounds import propagate
from .ops import EXACT
from .pipeline import Front, front, program
from .program import IntegrityError
from .spec import OpSpec, SpecError, seed_for

CLASSES = ("normal", "large", "tiny", "mixed", "special")
SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3e38, -3e38, 1.0, -1.0])
MAX_ALT_ELEMENTS = 1 << 21


@dataclass(frozen=True)
class Settings:
    shapes: int = 4          # extra shapes besides the spec's
    hidden_draws: int = 1    # fresh draws per checked shape, never reported in detail
    timeout_s: float = 600.0
    memory_gb: float = 16.0


# -- inputs -------------------------------------------------------------------------------------------


def alt_shapes(spec: OpSpec, count: int) -> list[dict[str, tuple[int, ...]]]:
    """Other shapes with the spec's structure: each size > 1 is a symbol replaced consistently.
    Sizes that are some input's last axis stay >= 2, so the kernel's access pattern is unchanged."""
    sizes = sorted({d for i in spec.inputs for d in i.shape if d > 1})
    inner = {i.shape[-1] for i in spec.inputs if i.shape}
    patterns = [(1, 1031), (3, 7), (5, 33), (2, 2), (17, 129), (7, 257)]
    out = []
    for outer_v, inner_v in patterns:
        subst = {}
        k = 0
        for s in sizes:
            if s in inner:
                subst[s] = inner_v + 2 * k
                k += 1
            else:
                subst[s] = outer_v
        shapes = {i.name: tuple(subst.get(d, d) for d in i.shape) for i in spec.inputs}
        if max(math.prod(s) for s in shapes.values()) <= MAX_ALT_ELEMENTS and shapes not in out:
            out.append(shapes)
        if len(out) == count:
            break
    return out


def draw(spec: OpSpec, cls: str, rng: np.random.Generator) -> list[np.ndarray]:
    """Inputs of one class, rounded to each input's dtype (held as the interpreter holds them)."""
    out = []
    for inp in spec.inputs:
        shape = inp.shape
        if inp.dtype == "bool":
            out.append(rng.random(shape) < 0.5)
            continue
        if inp.dtype == "int32":
            lo, hi = inp.range or (-100, 100)
            out.append(rng.integers(int(lo), int(hi) + 1, size=shape).astype(np.int32))
            continue
        if inp.range is not None:
            lo, hi = inp.range
            x = rng.uniform(lo, hi, size=shape)
            if cls == "special":  # the domain's edges
                edge = rng.random(shape) < 0.05
                x = np.where(edge, rng.choice([lo, hi], size=shape), x)
        else:
            x = rng.standard_normal(shape)
            if cls == "large":
                x = x * 1e4
            elif cls == "tiny":
                x = x * 1e-20
            elif cls == "mixed":
                x = x * 10.0 ** rng.uniform(-8, 8, size=shape)
            elif cls == "special":
                mask = _special_positions(shape, rng)
                x[mask] = rng.choice(SPECIALS, size=int(mask.sum()))
        out.append(dtypes.round_to(x, inp.dtype))
    return out


def _special_positions(shape, rng: np.random.Generator) -> np.ndarray:
    """Where special values go: one in every tenth row (most rows stay judgeable, since one inf
    makes a whole row's statistics infinite), or one element in a hundred along a single axis."""
    mask = np.zeros(shape, bool)
    if len(shape) < 2:
        return rng.random(shape) < 0.01 if shape else mask
    rows = rng.random(shape[:-1]) < 0.1
    cols = rng.integers(0, shape[-1], size=shape[:-1])
    mask[(*np.nonzero(rows), cols[rows])] = True
    return mask


def classes_for(spec: OpSpec) -> tuple[str, ...]:
    """With a `range` on every float input, the scale classes would leave the op's domain."""
    floats = [i for i in spec.inputs if i.dtype in dtypes.FLOATS]
    if floats and all(i.range is not None for i in floats):
        return ("normal", "special")
    return CLASSES


# -- comparison ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mismatch:
    output: int
    index: tuple[int, ...]
    expected: float
    got: float
    bound: float
    count: int

    def describe(self, shape) -> str:
        row = f" (row {list(self.index[:-1])})" if len(self.index) > 1 else ""
        return (f"output {self.output} element {list(self.index)}{row} of shape {list(shape)}: "
                f"expected {self.expected:.9g}, got {self.got:.9g}, allowed error {self.bound:.3g}; "
                f"{self.count} element(s) wrong")


def compare(got: np.ndarray, ref: np.ndarray, bound: np.ndarray, output: int) -> tuple[Mismatch | None, int, int]:
    """(first mismatch, elements judged, elements not judgeable) for one output. A NaN bound marks
    an element whose dtype overflowed where float64 did not; an infinite bound, one whose error
    can't be bounded (e.g. a comparison within error of its threshold)."""
    got = np.asarray(got, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        nan_ref, inf_ref = np.isnan(ref), np.isinf(ref)
        judgeable = ~np.isnan(bound) & (np.isfinite(bound) | nan_ref | inf_ref)
        ok = np.where(nan_ref, np.isnan(got),
                      np.where(inf_ref, got == ref, np.abs(got - ref) <= bound))
        ok = ok | ~judgeable
    bad = ~ok
    n_bad = int(bad.sum())
    if n_bad == 0:
        return None, int(judgeable.sum()), int((~judgeable).sum())
    flat = int(np.argmax(bad.reshape(-1)))
    idx = tuple(int(i) for i in np.unravel_index(flat, ref.shape)) if ref.shape else ()
    return Mismatch(output, idx, float(ref.reshape(-1)[flat]), float(got.reshape(-1)[flat]),
                    float(bound.reshape(-1)[flat]), n_bad), int(judgeable.sum()), int((~judgeable).sum())


def exact_mismatch(got: np.ndarray, want: np.ndarray, output: int) -> Mismatch | None:
    """Value-for-value equality (NaN matches NaN; +0 and -0 are equal values)."""
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    bad = ~((g == w) | (np.isnan(g) & np.isnan(w)))
    if not bad.any():
        return None
    flat = int(np.argmax(bad.reshape(-1)))
    idx = tuple(int(i) for i in np.unravel_index(flat, w.shape)) if w.shape else ()
    return Mismatch(output, idx, float(w.reshape(-1)[flat]), float(g.reshape(-1)[flat]), 0.0, int(bad.sum()))


def is_degenerate(refs: list[np.ndarray], bounds: list[np.ndarray]) -> bool:
    """A reference that can't tell a right kernel from a wrong one: nothing judgeable, all zero, or
    (with more than one element) the same value everywhere."""
    for r, b in zip(refs, bounds):
        r = np.asarray(r, np.float64)
        values = r[np.isfinite(r) & np.isfinite(b)]
        if values.size and np.any(values != 0) and (r.size == 1 or np.ptp(values) > 0):
            return False
    return True


# -- one candidate set, in this process ----------------------------------------------------------------


def check_shape(f: Front, prog, spec: OpSpec, cls: str, rng, exact: bool) -> dict:
    xs = draw(spec, cls, rng)
    refs = interp.evaluate(f.traced, xs, "float64")
    _, errs = propagate(f.canonical, xs)
    bounds = [np.asarray(errs[o]) for o in f.canonical.outputs]
    try:
        got = prog.run_guarded(xs)
        again = prog.run_guarded(xs)
    except IntegrityError as e:
        return {"class": cls, "passed": False, "reason": str(e)}
    for j, (a, b) in enumerate(zip(got, again)):
        a, b = a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)
        if not np.array_equal(a, b):
            diff = int(np.sum(a != b))
            return {"class": cls, "passed": False,
                    "reason": f"output {j} differs between two runs on the same inputs ({diff} bytes): "
                              "nondeterminism or a race"}
    got_values = [_as_float(g, f.canonical.nodes[o].dtype) for g, o in zip(got, f.canonical.outputs)]
    judged = unjudged = 0
    for j, (g, r, b) in enumerate(zip(got_values, refs, bounds)):
        mismatch, n_ok, n_un = compare(g, np.asarray(r, np.float64), np.broadcast_to(b, np.shape(r)), j)
        judged, unjudged = judged + n_ok, unjudged + n_un
        if mismatch:
            return {"class": cls, "passed": False, "reason": mismatch.describe(np.shape(r))}
    if exact:
        native = interp.evaluate(f.canonical, xs, "native")
        for j, (g, w) in enumerate(zip(got_values, native)):
            m = exact_mismatch(g, w, j)
            if m:
                return {"class": cls, "passed": False,
                        "reason": "exact ops must match the step-by-step reference: " + m.describe(np.shape(w))}
    worst = 0.0
    for g, r in zip(got_values, refs):
        diff = np.abs(g - np.asarray(r, np.float64))
        worst = max(worst, float(np.max(diff[np.isfinite(diff)], initial=0.0)))
    return {"class": cls, "passed": True, "judged": judged, "not_judgeable": unjudged,
            "degenerate": is_degenerate(refs, bounds), "max_abs_error": worst}


def _as_float(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def judge_candidates(spec: OpSpec, backend: str, libraries: dict[str, str], settings: Settings,
                     hidden_seed: int | None) -> dict:
    """Verdict for one choice of kernels (`libraries`: kernel name -> built library)."""
    be = backends.get(backend)
    loaded: dict[str, object] = {}
    shape_sets = [{i.name: i.shape for i in spec.inputs}] + alt_shapes(spec, settings.shapes)
    report, useful = [], 0
    for n, shapes in enumerate(shape_sets):
        s = spec.with_shapes(shapes)
        label = {k: list(v) for k, v in shapes.items()}
        try:
            f = front(s)
        except SpecError as e:
            report.append({"shapes": label, "status": f"skipped: the op does not trace at these shapes ({e})"})
            continue
        missing = [k.name for k in f.kernels if k is not None and k.name not in libraries]
        if missing:
            if n == 0:
                return {"passed": False, "reason": f"no candidate for kernel(s) {missing} at the spec's shapes",
                        "shapes": report}
            report.append({"shapes": label, "status": "skipped: lowers to other kernels at these shapes "
                                                      f"({', '.join(missing)})"})
            continue
        for k in f.kernels:
            if k is not None and k.name not in loaded:
                loaded[k.name] = be.Kernel(k, libraries[k.name])
        prog = program(f, loaded)
        exact = all(nd.op in EXACT for nd in f.canonical.nodes)
        checks = []
        for cls in (classes_for(spec) if n else ("normal", "special")):
            rng = np.random.default_rng(seed_for(spec.name, "judge", str(n), cls))
            result = check_shape(f, prog, s, cls, rng, exact)
            checks.append(result)
            if not result["passed"]:
                return {"passed": False, "reason": f"shapes {label}, inputs '{cls}': {result['reason']}",
                        "shapes": report + [{"shapes": label, "status": "failed", "checks": checks}]}
            useful += not result["degenerate"]
        report.append({"shapes": label, "status": "checked", "exact": exact, "checks": checks})
    if useful == 0:
        return {"passed": False, "reason": "no useful test: every reference was degenerate (all NaN, "
                                           "constant, or not judgeable)", "shapes": report}
    hidden = []
    if hidden_seed is not None:
        for n, shapes in enumerate(shape_sets[1:] or shape_sets):
            s = spec.with_shapes(shapes)
            try:
                f = front(s)
                prog = program(f, loaded)
            except (SpecError, KeyError):
                continue
            exact = all(nd.op in EXACT for nd in f.canonical.nodes)
            for d in range(settings.hidden_draws):
                rng = np.random.default_rng([hidden_seed, n, d])
                result = check_shape(f, prog, s, "normal", rng, exact)
                hidden.append(result["passed"])
                if not result["passed"]:
                    return {"passed": False, "reason": "failed on a hidden draw (inputs withheld; the public "
                                                       "checks passed)", "shapes": report,
                            "hidden": {"draws": len(hidden), "failed": 1}}
    return {"passed": True, "shapes": report, "hidden": {"draws": len(hidden), "failed": 0}}


# -- isolation ----------------------------------------------------------------------------------------


def run_isolated(spec: OpSpec, backend: str, libraries: dict[str, str], settings: Settings) -> dict:
    """Judge in a child process with time and memory limits; a crash or hang becomes the verdict."""
    payload = json.dumps({"spec": spec.to_json(), "backend": backend, "libraries": libraries,
                          "settings": settings.__dict__, "hidden_seed": secrets.randbits(63)})
    limit = int(settings.memory_gb * 2**30)

    def limits():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    try:
        proc = subprocess.run([sys.executable, "-m", "autoperfect.judge"], input=payload, text=True,
                              capture_output=True, timeout=settings.timeout_s, preexec_fn=limits,
                              env={**os.environ, **bench.all_cores()})  # threads expose races
    except subprocess.TimeoutExpired:
        return {"passed": False, "reason": f"timed out after {settings.timeout_s:.0f} s (a hang or an "
                                           "endless loop)"}
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        return {"passed": False, "reason": f"crashed with {name} (e.g. an out-of-bounds access)",
                "stderr": proc.stderr[-2000:]}
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["no message"]
        return {"passed": False, "reason": f"the judge's child failed: {tail[0]}", "stderr": proc.stderr[-2000:]}
    return json.loads(proc.stdout)


def main() -> None:
    req = json.loads(sys.stdin.read())
    verdict = judge_candidates(OpSpec.from_json(req["spec"]), req["backend"], req["libraries"],
                               Settings(**req["settings"]), req["hidden_seed"])
    sys.stdout.write(json.dumps(verdict, allow_nan=False))


if __name__ == "__main__":
    main()

