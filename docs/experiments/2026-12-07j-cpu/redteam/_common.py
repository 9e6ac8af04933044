"""Shared helpers for the red-team repros (a helper's, 2026-12-07; moved here from /tmp with their
paths made relative). Run any finding from the repository's root with its venv active:
   python docs/experiments/2026-12-07j-cpu/redteam/<finding>.py
"""
import sys, tempfile, time
from pathlib import Path
HERE = str(Path(__file__).resolve().parent)
ROOT = str(Path(__file__).resolve().parents[4])
sys.path.insert(0, ROOT); sys.path.insert(0, ROOT + "/tests")
import numpy as np
from op_table import config_specs, small_shapes
from autoperfect.pipeline import front
from autoperfect.backends import cpu
from autoperfect import static, judge

HEAD = "const int64_t *strides) {\n"
CACHE = tempfile.mkdtemp(prefix="redteam_cache")


def setup(op, full=False, sched=0):
    """(spec, kernel IR, rendered source) of a config op, at small shapes unless `full`."""
    spec = config_specs()[op]
    if not full:
        spec = spec.with_shapes(small_shapes(spec.inputs))
    (k,) = [k for k in front(spec).kernels if k]
    return spec, k, cpu.render(k, cpu.schedules_for(k)[sched])


def sub(src, old, new, count=1):
    assert src.count(old) >= 1, f"pattern not found: {old!r}"
    return src.replace(old, new, count)


def check_and_judge(spec, k, evil, isolated=True, seed=7, shapes=2):
    """static.check, build, then the judge (by default as the pipeline runs it: a child process with
    OMP_NUM_THREADS = every core, judge.run_isolated, fresh hidden seed)."""
    v = static.check(evil, "cpu", k.name)
    print(f"[{spec.name} {[tuple(i.shape) for i in spec.inputs]}] static.check:", v)
    if not v.passed:
        return v, None, None
    b = cpu.build(evil, CACHE)
    if not b.ok:
        print("  cpu.build refused it:", b.log.strip().splitlines()[-1][:200])
        return v, None, None
    t = time.time()
    if isolated:
        r = judge.run_isolated(spec, "cpu", {k.name: b.library}, judge.Settings(shapes=shapes))
    else:
        r = judge.judge_candidates(spec, "cpu", {k.name: b.library}, judge.Settings(shapes=shapes), seed)
    print(f"  judge passed: {r['passed']} {r.get('reason', '')} ({time.time() - t:.1f} s)")
    return v, r, b


def rmsnorm_ref(x, w, eps=1e-6):
    x = np.asarray(x, np.float64)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * np.asarray(w, np.float64)


def report_error(name, got, ref):
    got = np.asarray(got, np.float64)
    err = np.abs(got - ref)
    rel = err / np.maximum(np.abs(ref), 1e-30)
    print(f"  {name}: max abs err {np.nanmax(err):.3g}, max rel err {np.nanmax(rel):.3g}, "
          f"NaNs {int(np.isnan(got).sum())}, elements off by >1e-4 rel: {int((rel > 1e-4).sum())} of {got.size}")


def judge_on_inputs(spec, k, library, xs, label):
    """The judge's own check (judge.check_shape: guarded runs, float64 answer key, its error bounds)
    on inputs `xs` that we choose, e.g. realistic data the judge never draws."""
    from autoperfect.pipeline import program
    from autoperfect import interp
    from autoperfect.bounds import propagate
    from autoperfect.ops import EXACT
    s = spec.with_shapes({i.name: tuple(np.shape(x)) for i, x in zip(spec.inputs, xs)})
    f = front(s)
    prog = program(f, {k.name: cpu.Kernel(k, library)})
    exact = all(nd.op in EXACT for nd in f.canonical.nodes)
    xs = [np.asarray(x, np.float64) for x in xs]
    refs = interp.evaluate(f.traced, xs, "float64")
    _, errs = propagate(f.canonical, xs)
    outs = [judge.expected(r, errs[o]) for r, o in zip(refs, f.canonical.outputs)]
    native = interp.evaluate(f.canonical, xs, "native") if exact else None
    key = judge.AnswerKey(xs, outs, judge.is_degenerate([e.ref for e in outs], [e.bound for e in outs]), native)
    r = judge.check_shape(f, prog, s, "custom", None, exact, key=key)
    print(f"  judge.check_shape on {label}: passed={r['passed']} {r.get('reason', '')}")
    return r


def rejected(b, r) -> bool:
    """Whether the kernel was refused before a user could run it; says so."""
    if b is None or not r["passed"]:
        print("  rejected above: not run as a user would run it")
        return True
    return False
