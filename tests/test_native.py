"""Native dispatch: a generated kernel called through the C++ extension is a real MLX op.

It computes exactly what the ctypes path computes (bit for bit, over a table of programs), is lazy
(the kernel runs at mx.eval, once), composes with other MLX ops, runs inside mx.compile (equivalent
calls merged, different kernels kept apart), returns many outputs, handles 0-d, one-row and
non-contiguous inputs, and falls back to ctypes when turned off. The extension is built once into the
keyed cache (as `python -m autoperfect.native build` does); without a toolchain these tests skip.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import mlx.core as mx
import numpy as np
import pytest

from autoperfect import canon, contenders, fuse, native
from autoperfect.backends import cpu
from autoperfect.backends.cfamily import Unsupported
from autoperfect.pipeline import Front, lower_all, program

from op_table import BY_NAME, CONFIG, Case, config_specs, from_mx, make_inputs, to_mx, trace_case

# a probe kernel with the KernelIR ABI that counts its calls: out_k[i] = in[i * stride] + k + 1
PROBE = """\
#include <stdint.h>
static int64_t calls = 0;
int64_t probe_calls(void) { return calls; }
static void add(void **bufs, const int64_t *dims, const int64_t *strides, int outputs) {
  const float *in = (const float *)bufs[0];
  calls++;
  for (int k = 0; k < outputs; k++)
    for (int64_t i = 0; i < dims[0]; i++) ((float *)bufs[1 + k])[i] = in[i * strides[0]] + (float)(k + 1);
}
void probe_add(void **b, const int64_t *d, const int64_t *s) { add(b, d, s, 1); }
void probe_add_too(void **b, const int64_t *d, const int64_t *s) { add(b, d, s, 1); }
void probe_add3(void **b, const int64_t *d, const int64_t *s) { add(b, d, s, 3); }
"""

# programs whose kernels are compared path against path: the six config ops at small odd shapes,
# half and bfloat16 types, bool outputs, several outputs, broadcasting of a 0-d input
TABLE = [c.name for c in CONFIG] + ["multi_output", "multi_output_shared", "half_softmax", "bfloat_mean",
                                   "cast_to_bfloat", "operators_compare", "broadcast_zero_d", "three_chains"]
EDGES = [  # 0-d inputs (a one-element domain) and single rows
    Case("zero_d", lambda a, b: a * b + 1.0, (("a", (), "float32"), ("b", (), "float32"))),
    Case("one_row_rmsnorm", BY_NAME["config_rmsnorm"].fn,
         (("x", (1, 33), "float32"), ("w", (33,), "float32"))),
    Case("one_row_softmax", lambda x: mx.softmax(x, axis=-1), (("x", (1, 1031), "float32"),)),
]


@pytest.fixture(scope="session")
def ext():
    """The extension, built once into the keyed cache (so at most once per machine and version)."""
    if os.environ.get(native.DISABLE) == "0":
        pytest.skip(f"{native.DISABLE}=0 turns native dispatch off")
    missing = [what for what, found in (("C++ compiler", shutil.which("c++") or shutil.which("g++")),
                                         ("pip's cmake", importlib.util.find_spec("cmake")),
                                         ("nanobind", importlib.util.find_spec("nanobind"))) if not found]
    if missing:
        pytest.skip(f"cannot build the native extension here: no {', '.join(missing)}")
    native.build()
    module = native.load()
    assert module is not None, f"built but not loadable: {native.describe()}"
    return module


def build_probe(where: Path) -> str:
    """The probe's library, built as cpu.build builds a kernel's but without it: cpu.build refuses a
    library that keeps state between calls, which no kernel may and this test's own probe must."""
    (where / "probe.c").write_text(PROBE)
    subprocess.run([os.environ.get("CC", "gcc"), *cpu.FLAGS, "-o", str(where / "probe.so"), str(where / "probe.c")],
                   check=True)
    return str(where / "probe.so")


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    lib = ctypes.CDLL(build_probe(tmp_path_factory.mktemp("probe")))
    lib.probe_calls.restype = ctypes.c_int64
    return lib


def address(lib, name: str) -> int:
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value


def probe_call(lib, x, name: str = "probe_add", outputs: int = 1, n: int | None = None):
    n = x.size if n is None else n
    return native.kernel_call([x], address(lib, name), [n], [1], [x.shape] * outputs,
                              [mx.float32] * outputs, name)


def programs(case: Case) -> dict[str, object]:
    """The case compiled by the cpu backend, once per dispatch path (first schedule of each kernel)."""
    canonical = canon.canonicalize(trace_case(case))
    partition = fuse.fuse(canonical)
    front = Front(trace_case(case), canonical, partition, lower_all(partition))
    kernels = [k for k in front.kernels if k is not None]
    if not kernels:
        pytest.skip(f"{case.name}: everything is left to MLX")
    try:
        sources = {k.name: cpu.render(k, cpu.schedules_for(k)[0]) for k in kernels}
    except Unsupported as err:
        pytest.skip(f"{case.name}: {err}")
    libraries = {name: cpu.build(source).library for name, source in sources.items()}
    return {path: program(front, {k.name: cpu.Kernel(k, libraries[k.name], path) for k in kernels})
            for path in ("native", "ctypes")}


def bits(a) -> np.ndarray:
    """The array's bytes: equal bits, NaN payloads and signed zeros included."""
    if a.dtype == mx.bfloat16:
        a = a.view(mx.uint16)
    return np.array(a).reshape(-1).view(np.uint8)


@pytest.mark.parametrize("case", [BY_NAME[n] for n in TABLE] + EDGES, ids=repr)
def test_native_agrees_with_ctypes_bit_for_bit(ext, case):
    paths = programs(case)
    for path, prog in paths.items():
        assert {s.run.dispatch for s in prog.steps if s.run is not None} == {path}
    inputs = to_mx(case, make_inputs(case, "native"))
    results = {}
    for path, prog in paths.items():
        out = prog(*inputs)
        out = list(out) if isinstance(out, tuple) else [out]
        mx.eval(out)
        results[path] = out
    for j, (got, want) in enumerate(zip(results["native"], results["ctypes"])):
        assert got.shape == want.shape and got.dtype == want.dtype, f"output {j}"
        assert np.array_equal(bits(got), bits(want)), f"output {j} differs: {from_mx(got)} vs {from_mx(want)}"


def test_the_kernel_runs_at_eval_and_only_once(ext, probe):
    x = mx.arange(8, dtype=mx.float32) * 2  # a lazy input: its producer runs in the same eval
    before = probe.probe_calls()
    (y,) = probe_call(probe, x)
    assert probe.probe_calls() == before, "the kernel ran before mx.eval"
    mx.eval(y)
    assert probe.probe_calls() == before + 1
    mx.eval(y)
    assert probe.probe_calls() == before + 1, "an evaluated output must not run its kernel again"
    assert np.array_equal(np.array(y), np.arange(8) * 2 + 1)


def test_composes_with_other_mlx_ops(ext, probe):
    x = mx.linspace(-1, 1, 12).reshape(3, 4)
    (y,) = probe_call(probe, mx.exp(x) * 3)
    total = mx.sum(mx.sqrt(y), axis=-1)
    want = np.sum(np.sqrt(np.array(mx.exp(x) * 3) + 1), axis=-1)
    np.testing.assert_allclose(np.array(total), want, rtol=1e-6)


def test_many_outputs_come_from_one_call(ext, probe):
    x = mx.arange(5, dtype=mx.float32)
    before = probe.probe_calls()
    outs = probe_call(probe, x, "probe_add3", outputs=3)
    mx.eval(outs[1])  # evaluating one output computes its siblings
    assert probe.probe_calls() == before + 1
    for k, out in enumerate(outs):
        assert np.array_equal(np.array(out), np.arange(5) + k + 1)


@pytest.mark.parametrize("n", [1, 7, 4099, 1 << 20])
def test_outputs_start_on_a_cache_line_and_behave_as_any_array(ext, probe, n):
    """MLX's CPU allocator returns blocks 8 bytes past a 16-byte boundary; a kernel's outputs start
    on a 64-byte line of a block one line longer, and behave as any array: read, sliced, and
    donated to the op that consumes them (their only reference gone), the values unchanged."""
    x = mx.arange(n, dtype=mx.float32)
    outs = probe_call(probe, x, "probe_add3", outputs=3)
    mx.eval(outs)
    for k, y in enumerate(outs):
        assert np.asarray(memoryview(y)).ctypes.data % 64 == 0, f"output {k} of {n}"
        assert np.array_equal(np.array(y), np.arange(n) + k + 1)
        assert np.array_equal(np.array(y[1::2]), np.arange(n)[1::2] + k + 1)
    donated = mx.exp(probe_call(probe, x)[0] * 0) + x  # the kernel's output is consumed and dropped
    assert np.array_equal(np.array(donated), np.arange(n) + 1)


CHILD_PRELUDE = """
import ctypes, sys
import mlx.core as mx, numpy as np
from autoperfect.backends import cpu
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import tempfile
from test_native import build_probe, probe_call
lib = ctypes.CDLL(build_probe(Path(tempfile.mkdtemp())))
"""


def run_in_child(script: str, env: dict[str, str]) -> str:
    """`script` after CHILD_PRELUDE (the probe kernel's library as `lib`) in a fresh Python with
    `env` and this checkout importable; its standard output. For settings the extension reads
    once, when it loads."""
    tests = Path(__file__).resolve().parent
    out = subprocess.run([sys.executable, "-c", CHILD_PRELUDE + script, str(tests)],
                         env={**env, "PYTHONPATH": str(tests.parent)}, capture_output=True, text=True, cwd=tests)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


PLACEMENT_PROBE = """
for n in (1, 7, 4099, 1 << 20):
    outs = probe_call(lib, mx.arange(n, dtype=mx.float32), "probe_add3", outputs=3)
    mx.eval(outs)
    print(*(np.asarray(memoryview(y)).ctypes.data % 64 for y in outs))
"""


def test_aligned_outputs_can_be_turned_off(ext, probe):
    """set_aligned_outputs(False) keeps MLX's own placement (8 bytes past a 16-byte boundary, so
    never on a line) for the calls evaluated after it, and True restores the line; so does
    AUTOPERFECT_ALIGN_OUTPUTS=0 as the default (read when the extension loads: in a child)."""
    x = mx.arange(4099, dtype=mx.float32)
    assert ext.set_aligned_outputs(False) is True
    try:
        (mlx_placed,) = probe_call(probe, x)
        mx.eval(mlx_placed)
    finally:
        assert ext.set_aligned_outputs(True) is False
    (lined,) = probe_call(probe, x)
    mx.eval(lined)
    assert np.asarray(memoryview(mlx_placed)).ctypes.data % 16 == 8
    assert np.asarray(memoryview(lined)).ctypes.data % 64 == 0
    assert np.array_equal(np.array(mlx_placed), np.array(lined))

    child = run_in_child(PLACEMENT_PROBE, {**os.environ, "AUTOPERFECT_ALIGN_OUTPUTS": "0"})
    offsets = [int(v) for v in child.split()]
    assert len(offsets) == 12 and all(v % 16 == 8 for v in offsets), offsets


def test_runs_inside_mx_compile_and_merges_only_equal_calls(ext, probe):
    f = mx.compile(lambda x: probe_call(probe, x * 2)[0] - 1)
    for start in (0.0, 10.0):
        x = mx.arange(6, dtype=mx.float32) + start
        assert np.array_equal(np.array(f(x)), np.array(x) * 2)
    same = mx.compile(lambda x: probe_call(probe, x)[0] + probe_call(probe, x)[0])
    apart = mx.compile(lambda x: probe_call(probe, x)[0] + probe_call(probe, x, "probe_add_too")[0])
    x = mx.arange(4, dtype=mx.float32)
    for fn, runs in ((same, 1), (apart, 2)):
        before = probe.probe_calls()
        assert np.array_equal(np.array(fn(x)), 2 * (np.arange(4) + 1))
        assert probe.probe_calls() == before + runs


def test_a_launch_bound_once_serves_every_call_and_stream(ext, probe):
    bound = ext.launcher(address(probe, "probe_add"), [[4]], [mx.float32], [4], [1], [[4]], [mx.float32], "probe_add")
    x, y = mx.arange(4, dtype=mx.float32), mx.arange(4, dtype=mx.float32) * 10
    before = probe.probe_calls()
    f = mx.compile(lambda a, b: bound([a])[0] + bound([a])[0] + bound([b])[0])
    assert np.array_equal(np.array(f(x, y)), 2 * (np.arange(4) + 1) + np.arange(4) * 10 + 1)
    assert probe.probe_calls() == before + 2, "equal calls merge, calls on other inputs do not"
    with mx.stream(mx.new_stream(mx.cpu)):
        assert np.array_equal(np.array(bound([y])[0]), np.arange(4) * 10 + 1)
    with pytest.raises(ValueError, match="probe_add: takes 1 inputs, got 2"):
        bound([x, y])
    with pytest.raises(ValueError, match=r"probe_add: input 0 is float32 \[8\], and the launch was made for "
                                         r"float32 \[4\]"):
        bound([mx.arange(8, dtype=mx.float32)])
    with pytest.raises(ValueError, match=r"probe_add: input 0 is int32 \[4\], .* made for float32 \[4\]"):
        bound([mx.arange(4, dtype=mx.int32)])


@pytest.mark.parametrize("axis", [0, 1])
def test_vmap_runs_the_launch_once_per_example(ext, probe, axis):
    """mx.vmap of a kernel call: each example is one call of the same launch on its own slice (a
    batch along a strided axis is made contiguous first), the outputs stacked on a leading axis;
    nested, each level loops; a derivative is still refused (the runtime supplies its own)."""
    bound = ext.launcher(address(probe, "probe_add3"), [[4]], [mx.float32], [4], [1], [[4]] * 3,
                         [mx.float32] * 3, "probe_add3")
    batch = (mx.arange(12, dtype=mx.float32) * 3).reshape((3, 4) if axis == 0 else (4, 3))
    mx.eval(batch)
    before = probe.probe_calls()
    outs = mx.vmap(lambda x: tuple(bound([x])), in_axes=axis)(batch)
    mx.eval(outs)
    assert probe.probe_calls() == before + 3
    examples = np.moveaxis(np.array(batch), axis, 0)
    for k, out in enumerate(outs):
        assert out.shape == (3, 4) and np.array_equal(np.array(out), examples + k + 1)
    nested = mx.vmap(mx.vmap(lambda x: bound([x])[0]))(mx.broadcast_to(batch.reshape(1, 12)[:, :4], (2, 3, 4)))
    assert np.array_equal(np.array(nested), np.broadcast_to(np.arange(4) * 3 + 1, (2, 3, 4)))
    with pytest.raises(ValueError, match="vjp"):
        mx.grad(lambda x: bound([x])[0].sum())(mx.arange(4, dtype=mx.float32))


def test_a_program_refuses_arrays_its_launches_were_not_made_for(ext):
    """A kernel's sizes are fixed at its launch: called on other shapes or dtypes, a program says
    which input misfits, on either dispatch path, and never runs the kernel past the arrays' ends."""
    case = BY_NAME["config_add_rmsnorm"]
    inputs = to_mx(case, make_inputs(case, "misfit"))
    rows = [x[:1] if x.ndim > 1 else x for x in inputs]
    halves = [x.astype(mx.float16) for x in inputs]
    for path, prog in programs(case).items():
        with pytest.raises(ValueError, match=r"input \d is float32 \[1, \d+\], and the launch was made "
                                             r"for float32 \[\d+, \d+\]"):
            prog(*rows)
        with pytest.raises(ValueError, match=r"input 0 is float16 \[.*made for float32"):
            prog(*halves)


def test_a_whole_program_compiles(ext):
    case = BY_NAME["config_add_rmsnorm"]
    prog = programs(case)["native"]
    inputs = to_mx(case, make_inputs(case, "compile"))
    assert np.array_equal(bits(mx.compile(prog)(*inputs)), bits(prog(*inputs)))


def test_shapeless_compile_is_refused_with_the_reason(ext, probe):
    f = mx.compile(lambda x: probe_call(probe, x)[0], shapeless=True)
    with pytest.raises(ValueError, match="fixed sizes"):
        f(mx.arange(3, dtype=mx.float32))


@pytest.mark.parametrize("view", ["transpose", "step", "broadcast"])
def test_non_contiguous_inputs_are_made_contiguous(ext, probe, view):
    base = mx.arange(24, dtype=mx.float32).reshape(4, 6)
    mx.eval(base)
    x = {"transpose": base.T, "step": base[:, ::2], "broadcast": mx.broadcast_to(base[:1], (4, 6))}[view]
    (y,) = probe_call(probe, x)
    assert np.array_equal(np.array(y), np.array(x) + 1)


def test_turned_off_it_falls_back_to_ctypes(ext, monkeypatch):
    case = BY_NAME["config_rmsnorm"]
    k = next(k for k in lower_all(fuse.fuse(canon.canonicalize(trace_case(case)))) if k is not None)
    library = cpu.build(cpu.render(k)).library
    assert cpu.Kernel(k, library).dispatch == "native"
    monkeypatch.setenv(native.DISABLE, "0")
    assert native.load() is None and native.describe()["dispatch"] == "ctypes"
    assert cpu.Kernel(k, library).dispatch == "ctypes"
    with pytest.raises(native.NativeBuildError, match="not available"):
        cpu.Kernel(k, library, "native")


def test_the_build_key_follows_the_sources(tmp_path, monkeypatch):
    for name in native.SOURCES:
        shutil.copy(native.SOURCE_DIR / name, tmp_path / name)
    native.build_key.cache_clear()
    monkeypatch.setattr(native, "SOURCE_DIR", tmp_path)
    try:
        key = native.build_key()
        native.build_key.cache_clear()
        (tmp_path / "kernel_op.cpp").write_text((tmp_path / "kernel_op.cpp").read_text() + "\n// edit\n")
        assert native.build_key() != key
    finally:
        native.build_key.cache_clear()


def test_dispatch_comparison_reports_both_paths(ext):
    case = BY_NAME["config_rmsnorm"]
    spec = config_specs()["rmsnorm"].with_shapes({name: shape for name, shape, _ in case.inputs})
    result = contenders.dispatch({"spec": spec.to_json(), "warmup": 1, "repeats": 3})
    assert set(result["timings"]) == {"native", "ctypes", "mlx_eager"}
    assert set(result["speedup_over_mlx_eager"]) == {"native", "ctypes"}
    assert result["dispatch"]["dispatch"] == "native"


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
@pytest.mark.parametrize("setting, kept", [("1", True), ("0", False)])
def test_warm_allocator_keeps_freed_memory(setting, kept):
    """A freed 64 MiB block stays in glibc's heap (free bytes) only with the setting on."""
    probe = """
import ctypes, autoperfect
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype, libc.malloc.restype, libc.free.argtypes = Info, ctypes.c_void_p, [ctypes.c_void_p]
libc.free(libc.malloc(64 << 20))
print(libc.mallinfo2().fordblks >= 64 << 20)
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env["AUTOPERFECT_WARM_ALLOCATOR"] = setting
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(kept)


HUGE_PAGE_PROBE = """
def vm_flags(address):
    flags, current = {}, None
    for line in open("/proc/self/smaps").read().splitlines():
        head = line.split()[0]
        if "-" in head and all(c in "0123456789abcdef-" for c in head):
            current = tuple(int(v, 16) for v in head.split("-"))
        elif line.startswith("VmFlags:"):
            flags[current] = line.split()[1:]
    (found,) = [f for (lo, hi), f in flags.items() if lo <= address < hi]
    return found

for n in (16 << 20, 1 << 16):   # a 64 MiB output (past glibc's largest mmap threshold: fresh pages), a 256 KiB one
    (y,) = probe_call(lib, mx.zeros((n,)))
    mx.eval(y)
    assert float(y[n - 1]) == 1.0
    # the last element's page: the hint covers the whole pages inside the buffer, not the first one,
    # which its allocator shares with the block's header
    print(n, "hg" in vm_flags(np.asarray(memoryview(y)).ctypes.data + 4 * n - 4))
"""


@pytest.mark.skipif(not Path("/sys/kernel/mm/transparent_hugepage/enabled").exists(),
                    reason="no transparent huge pages in this kernel")
@pytest.mark.parametrize("setting, large_hinted", [(None, True), ("0", False)])
def test_large_fresh_outputs_are_offered_huge_pages(ext, setting, large_hinted):
    """A native call's output of 4 MiB or more that the kernel will fault in is madvised onto huge
    pages (its mapping carries `hg` in /proc/self/smaps); a small one is not; with
    AUTOPERFECT_HUGE_PAGES=0 none is. In a child with glibc's default allocator, so the 64 MiB
    output is a fresh mapping of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "AUTOPERFECT_HUGE_PAGES"}
    if setting is not None:
        env["AUTOPERFECT_HUGE_PAGES"] = setting
    assert run_in_child(HUGE_PAGE_PROBE, env).split() == [str(16 << 20), str(large_hinted), str(1 << 16), "False"]
