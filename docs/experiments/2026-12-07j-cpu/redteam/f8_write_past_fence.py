"""Finding 8: a write beyond the 64-element canary fence is not detected; in production it corrupts
other arrays (or the heap).

guarded_call fences each output with CANARY=64 elements on each side; nothing checks memory further
away, so the judge only notices such a store if it happens to crash the child. A kernel that stores
one float 200 elements past its output's end lands in the judge child's heap (another Python/numpy
allocation) and, in our runs, usually does not crash: it passes. CAVEAT: whether it crashes depends
on the child's heap layout (we saw 10/10 passes with one environment and crashes with another), so
this script runs the judge several times and prints the tally. In production the same store lands
in whatever MLX allocated next to the output: another live array of the user's, silently changed.
Modification (rmsnorm, `rows` schedule): after the row loop, `out2[R * N + 200] = 1234.5f;`
"""
from _common import *
import collections, os, subprocess, textwrap

DIST = 200
tally = collections.Counter()
for full in (False, True):
    spec, k, src = setup("rmsnorm", full=full)
    evil = src.rstrip()[:-1] + f"  out2[R * N + {DIST}] = 1234.5f;\n}}\n"
    v, r, b = check_and_judge(spec, k, evil)
    for i in range(4 if b is not None else 0):
        r = judge.run_isolated(spec, "cpu", {k.name: b.library}, judge.Settings(shapes=2))
        tally[(tuple(spec.inputs[0].shape), "PASSED" if r["passed"] else r["reason"][:40])] += 1
print("  judge verdicts over 4 more runs per shape:", dict(tally))

if rejected(b, r):
    raise SystemExit(0)
prod = textwrap.dedent(f"""
    import sys; sys.path.insert(0, {HERE!r})
    from _common import *
    import mlx.core as mx
    spec, k, src = setup("rmsnorm", full=False)
    kern = cpu.Kernel(k, {b.library!r})
    rng = np.random.default_rng(0)
    live = []
    for i in range(200):
        a = mx.array(rng.standard_normal(int(rng.integers(4, 400))).astype(np.float32)); mx.eval(a)
        live.append((a, np.array(a)))
    x = mx.array(rng.standard_normal((3, 7)).astype(np.float32)); w = mx.array(rng.standard_normal(7).astype(np.float32))
    for t in range(50):
        (out,) = kern([x, w]); mx.eval(out)
        live.append((out, np.array(out)))
        a = mx.array(rng.standard_normal(int(rng.integers(4, 400))).astype(np.float32)); mx.eval(a)
        live.append((a, np.array(a)))
    bad = [(i, int(j), float(np.array(a).reshape(-1)[j])) for i, (a, c) in enumerate(live)
           for j in np.flatnonzero(np.array(a).reshape(-1) != c.reshape(-1))]
    print(f"  production (3x7, 50 calls): {{len({{i for i, _, _ in bad}})}} of {{len(live)}} live MLX arrays changed;"
          f" (array, element, new value): {{bad[:6]}}", flush=True)
""")
p = subprocess.run([sys.executable, "-c", prod], capture_output=True, text=True, env=os.environ)
print(p.stdout, end="")
if p.returncode:
    print("  production process died with", p.returncode, "(heap corruption)")
