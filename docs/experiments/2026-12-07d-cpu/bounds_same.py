"""bounds.propagate against the version at commit OLD (read with `git show`): every node's float64
value and bound, for the 175 cases of tests/op_table.py (three draws each, two of them with
specials where the case has them) and for the config ops (rows cut to 64) and the graphs of saved
gate requests (their alternate shapes) at every input class of judge.classes_for, three seeds each.
    python bounds_same.py OLD [REQUEST.json ...]"""
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

root = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(root / "tests"))
import op_table  # noqa: E402

from autoperfect import bounds, canon, judge, runtime  # noqa: E402
from autoperfect.graph import Graph  # noqa: E402
from autoperfect.pipeline import front  # noqa: E402

text = subprocess.run(["git", "-C", str(root), "show", f"{sys.argv[1]}:autoperfect/bounds.py"],
                      capture_output=True, text=True, check=True).stdout
old_file = Path(tempfile.mkdtemp()) / "bounds_old.py"
old_file.write_text(text.replace("from . import", "from autoperfect import").replace("from .", "from autoperfect."))
spec = importlib.util.spec_from_file_location("bounds_old", old_file)
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)


def same(graph, xs) -> tuple[int, int]:
    """(nodes compared, nodes whose value or bound differ); (0, 0) where both raise the same error
    (an integer node's bound has no rule: judged exactly elsewhere), (0, 1) where one raises only."""
    try:
        v0, e0 = old.propagate(graph, xs, keep=True)
    except Exception as e:
        try:
            bounds.propagate(graph, xs, keep=True)
        except type(e):
            return 0, 0
        return 0, 1
    v1, e1 = bounds.propagate(graph, xs, keep=True)
    bad = sum(not (np.shape(e1[k]) == np.broadcast_shapes(np.shape(e0[k]), np.shape(e1[k]))
                   and np.array_equal(np.broadcast_to(e0[k], np.shape(e1[k])), e1[k], equal_nan=True)
                   and np.array_equal(v0[k], v1[k], equal_nan=True)) for k in e0)
    return len(e0), bad


count = differ = 0
for case in op_table.CASES:
    g = canon.canonicalize(op_table.trace_case(case))
    for salt, specials in (("a", False), ("b", True), ("c", True)):
        xs = [np.asarray(x, np.float64) if np.asarray(x).dtype.kind == "f" else np.asarray(x)
              for x in op_table.make_inputs(case, salt, specials)]
        n, bad = same(g, xs)
        count, differ = count + n, differ + bad
print(f"op_table: {len(op_table.CASES)} cases, {count} nodes, {differ} different")
fronts = []
for name, s in op_table.config_specs().items():
    s = s.with_shapes({i.name: tuple(min(d, 64) for d in i.shape) for i in s.inputs})
    fronts.append((name, front(s), s))
for path in sys.argv[2:]:
    g = Graph.from_json(json.load(open(path))["graphs"][1])
    fronts.append((path, runtime.front_of(g), runtime.spec_of(g)))
count = differ = 0
for name, f, s in fronts:
    for cls in judge.classes_for(s):
        for seed in range(3):
            n, bad = same(f.canonical, judge.draw(s, cls, np.random.default_rng(seed)))
            count, differ = count + n, differ + bad
print(f"config ops and requests ({', '.join(n for n, _, _ in fronts)}): {count} nodes, {differ} different")
