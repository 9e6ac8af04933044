"""Static checks: every source the renderers emit passes; each banned construct is rejected with a
reason naming it, before anything compiles."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import mlx.core as mx
import pytest

from autoperfect import artifacts, static
from autoperfect.backends import cpu, cuda, metal
from autoperfect.ops import ELEMENTWISE, REDUCE, Op
from autoperfect.pipeline import front
from autoperfect.stages import compile_stage

from op_table import config_specs, small_shapes

SPECS = config_specs()


def kernels_of(name: str):
    spec = SPECS[name]
    return [k for k in front(spec.with_shapes(small_shapes(spec.inputs))).kernels if k is not None]


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("be", [cpu, cuda, metal], ids=lambda b: b.NAME)
def test_every_rendering_passes(name, be):
    for k in kernels_of(name):
        for schedule in be.schedules_for(k):
            verdict = static.check(be.render(k, schedule), be.NAME, k.name)
            assert verdict.passed, f"{name} {schedule.name}: {verdict.reason}"


@pytest.fixture(scope="module")
def rms():
    """The rmsnorm kernel and its cpu source, the base every bad source below is made from."""
    k = kernels_of("rmsnorm")[0]
    return k, cpu.render(k, cpu.schedules_for(k)[0])


def inside(source: str, statement: str) -> str:
    """`statement` as the first line of the kernel's body."""
    head = "const int64_t *strides) {\n"
    assert head in source
    return source.replace(head, head + f"  {statement}\n", 1)


BODY = {  # statement in the kernel body -> words the reason must contain
    'system("rm -rf /");': "uses system (process control)",
    'void *f = (void *)fopen;': "uses fopen (file access)",
    "long s = syscall(39);": "uses syscall",
    "void *m = mmap(0, 4096, 3, 34, -1, 0);": "uses mmap",
    'void *h = dlopen("libc.so.6", 2);': "uses dlopen",
    'char *e = getenv("HOME");': "uses getenv",
    "int pid = fork();": "uses fork",
    'execve("/bin/sh", 0, 0);': "uses execve",
    "int sock = socket(2, 1, 0);": "uses socket (network access)",
    "jmp_buf jb; setjmp(jb);": "uses setjmp (non-local jumps)",
    '__asm__ volatile ("nop");': "uses __asm__ (inline assembly",
    'asm("int3");': "uses asm",
    '_Pragma("GCC optimize(\\"fast-math\\")")': "uses _Pragma",
    "((void (*)(void))bufs[0])();": "a function pointer",
    "static void *target = &&done; goto *target; done:;": "computed goto",
    "float h = helper_from_elsewhere(1.0f);": "calls helper_from_elsewhere",
    "float p = __builtin_frame_address(0) != 0;": "calls __builtin_frame_address",
    "sys\\\ntem(0);": "uses system",
    # read before it is given a value: what a register held (0 on the H200) is no answer key's
    "float acc; for (int i = 0; i < 4; i++) acc += 1.0f; (void)acc;": "declares acc without a value",
    "float s = 0.0f, t; t = t + s; (void)t;": "declares t without a value",
    "int64_t i; (void)i;": "declares i without a value",
    "float s = 0.0f,\n      t; t += s; (void)t;": "declares t without a value",
}
TOP = {  # lines before the kernel -> words the reason must contain
    "#include <stdio.h>": "#include <stdio.h>",
    '#include "/etc/passwd"': "#include",
    '#pragma GCC optimize("fast-math")': "#pragma GCC optimize",
    # only FMA contraction's pragma, word for word (its string is emptied before the other checks)
    '#pragma GCC optimize ("fp-contract=fast", "fast-math")': "#pragma GCC optimize",
    '#pragma GCC optimize ("fast-math") // ("fp-contract=fast")': "#pragma GCC optimize",
    '#pragma GCC \\\noptimize ("fast-math")': "#pragma GCC optimize",
    "#pragma STDC FP_CONTRACT ON": "#pragma STDC FP_CONTRACT ON",
    "#pragma omp critical": "#pragma omp critical",
    "#define CAT(a, b) a##b": "token pasting",
    "%:include <stdio.h>": "digraph",
    "#line 1": "the #line directive",
    "__attribute__((constructor)) static void init(void) {}": "__attribute__((constructor))",
    "__attribute__((optimize(3))) static float twice(float x) { return 2 * x; }": "optimize",
    "int caf\u00e9 = 1;": "character",
    "/* never closed": "unterminated comment",
    # what an object-like macro or the [[...]] spelling of an attribute hides (a red team's kernel ran
    # a shell command at load through both, its arithmetic untouched)
    "#define AP_EXPAND wordexp\nstatic void ap_i(void) { AP_EXPAND(0, 0, 0); }": "calls wordexp",
    "#define A __attribute__\nA((constructor)) static void ap_i(void) {}": "__attribute__((constructor))",
    "#define AP_KEEP float ap_n\nAP_KEEP;": "keeps state between calls",
    "[[gnu::constructor]] static void ap_i(void) {}": "a [[...]] attribute",
    "[ [gnu::constructor] ] static void ap_i(void) {}": "a [[...]] attribute",
}


@pytest.mark.parametrize("statement, words", BODY.items(), ids=list(BODY))
def test_banned_construct_in_the_body_is_rejected(rms, statement, words):
    k, source = rms
    verdict = static.check(inside(source, statement), "cpu", k.name)
    assert not verdict.passed and words in verdict.reason, verdict


@pytest.mark.parametrize("line, words", TOP.items(), ids=list(TOP))
def test_banned_construct_at_the_top_is_rejected(rms, line, words):
    k, source = rms
    verdict = static.check(line + "\n" + source, "cpu", k.name)
    assert not verdict.passed and words in verdict.reason, verdict


# Declarations that keep state between calls: a kernel right for its first N calls and wrong after
# (`static int calls; if (++calls > 200) return;`) passes every output check, which runs it a few
# dozen times. Top of the source, then the kernel's body.
STATE_TOP = ["float ap_global;", "static int ap_calls;", "int ap_calls = 0;", "static float ap_cache[64] = {0};",
             "const float *ap_last;", "struct { int n; } ap_state;", "typedef struct { int n; } ap_s;\nap_s ap_state;",
             "extern int signgam;", "static struct ap_st { int n; } ap_state = {0};"]
STATE_BODY = ["static int calls; if (++calls > 200) return;", "static float last = 0.0f; (void)last;",
              "static const float *p = 0; (void)p;", "static struct { int n; } st; st.n++;",
              "static float cache[4] = {0}; (void)cache;", "extern int signgam; (void)signgam;"]


@pytest.mark.parametrize("line", STATE_TOP + [f"BODY {b}" for b in STATE_BODY])
def test_state_kept_between_calls_is_rejected(rms, line):
    k, source = rms
    bad = inside(source, line[5:]) if line.startswith("BODY ") else line + "\n" + source
    verdict = static.check(bad, "cpu", k.name)
    assert not verdict.passed and "keeps state between calls" in verdict.reason, verdict


@pytest.mark.parametrize("line, words", [
    ("#define KEEP static\nKEEP int ap_n;", "a macro holding a storage class"),
    ("_Thread_local int ap_n;", "uses _Thread_local (state kept between calls)"),
    ("__thread int ap_n;", "uses __thread"),
])
def test_state_hidden_in_a_macro_or_thread_storage_is_rejected(rms, line, words):
    k, source = rms
    verdict = static.check(line + "\n" + source, "cpu", k.name)
    assert not verdict.passed and words in verdict.reason, verdict


def test_a_gpu_source_keeps_no_state_in_its_header_or_its_body():
    """A GPU source's body goes inside the signature MLX writes: a `static` there is the kernel's."""
    k = kernels_of("rmsnorm")[0]
    for be in (cuda, metal):
        source = be.render(k, be.schedules_for(k)[0])
        header, body = "//// header\n", "//// body\n"
        assert header in source and body in source
        shared = "__shared__" if be is cuda else "threadgroup"
        fine = source.replace(body, body + f"static const float ap_c = 1.0f; (void)ap_c; {shared} float ap_s[4];\n")
        assert static.check(fine, be.NAME, k.name).passed, static.check(fine, be.NAME, k.name).reason
        bad = ["static int calls = 0; calls++;"] + (["static __device__ int calls; calls++;"] if be is cuda else [])
        for line in bad:
            verdict = static.check(source.replace(body, body + line + "\n"), be.NAME, k.name)
            assert not verdict.passed and "keeps state between calls" in verdict.reason, (be.NAME, line, verdict)
    source = cuda.render(k, cuda.schedules_for(k)[0])
    for line in ("__device__ int ap_calls;", "__device__ int ap_calls(0);", "__device__ int ap_calls{0};",
                 "namespace ap { __device__ int calls; }", "__managed__ int ap_calls;"):
        verdict = static.check(source.replace(header, header + line + "\n"), "cuda", k.name)
        assert not verdict.passed and "between calls" in verdict.reason, (line, verdict)


def test_a_library_that_keeps_state_is_not_built_however_the_source_spells_it(tmp_path):
    """cpu.build reads the machine code: an object the library can write that an empty library
    lacks fails the build, a macro's spelling too (which the text's checks may not see through)."""
    kernel = "void k(void **bufs, const int64_t *dims, const int64_t *strides) { %s }\n"
    head = "#include <stdint.h>\n"
    for top, body in [("", "static int calls; calls++;"), ("#define KEEP(t, n) t n\nKEEP(int, ap_n);\n", "ap_n++;"),
                      ("float ap_cache[16];\n", "ap_cache[0] = 1.0f;"), ("__thread int ap_t;\n", "ap_t++;")]:
        build = cpu.build(head + top + kernel % body, tmp_path)
        assert not build.ok and "keeps state between calls" in build.log, build.log
    # constants, a constant pointer the loader writes (.data.rel.ro) and a function's locals
    clean = cpu.build(head + "static const float ap_t[2] = {1.0f, 2.0f};\nconst float *const ap_p = ap_t;\n"
                      + kernel % "float x[4] = {0}; x[1] = ap_p[0]; ((float *)bufs[0])[0] = x[1];", tmp_path)
    assert clean.ok, clean.log


def test_a_library_that_calls_or_runs_at_load_what_no_kernel_needs_is_not_built(tmp_path):
    """cpu.build reads the library's imports and load-time tables against an empty library's: a
    function outside the math library, OpenMP's runtime and the compiler's helpers, or a
    constructor, fails the build however the source spelled it."""
    head = "#include <stdint.h>\n#include <math.h>\n"
    kernel = "void k(void **bufs, const int64_t *dims, const int64_t *strides) { %s }\n"
    for top, body, words in [
        ("int wordexp(const char *, void *, int);\n", "char w[64]; if (dims[0] < 0) (wordexp)(0, w, 0);",
         "calls wordexp"),
        ("void omp_set_num_threads(int);\n", "omp_set_num_threads(1);", "calls omp_set_num_threads"),
        ("[[gnu::constructor]] static void ap_i(void) { volatile float t = expf(2.0f); (void)t; }\n", "",
         "runs code when it is loaded"),
    ]:
        build = cpu.build(head + top + kernel % body, tmp_path)
        assert not build.ok and words in build.log, (words, build.log)
    fine = cpu.build(head + kernel % "float *o = bufs[0]; o[0] = expf(o[1]) + tanhf(o[2]);", tmp_path)
    assert fine.ok, fine.log


@pytest.mark.parametrize("change, words", [
    (lambda s, n: s.replace(n, "k_renamed"), "does not define the kernel function"),
    (lambda s, n: s.replace(f"void {n}(", f"static void {n}("), "is not the ABI"),
    (lambda s, n: s.replace("const int64_t *strides)", "const int32_t *strides)"), "is not the ABI"),
    (lambda s, n: s + f"\nvoid {n}(void **b, const int64_t *d, const int64_t *s) {{}}\n", "2 times"),
    (lambda s, n: f"#define {n} other\n" + s, "renames the kernel"),
    (lambda s, n: s + "/*" + "x" * static.MAX_BYTES + "*/", "over the limit"),
])
def test_kernel_definition_and_size(rms, change, words):
    k, source = rms
    verdict = static.check(change(source, k.name), "cpu", k.name)
    assert not verdict.passed and words in verdict.reason, verdict


def test_names_in_comments_and_strings_and_allowed_constructs_pass(rms):
    """No false rejections: banned names in comments or string literals, a helper the source
    defines, macros, OpenMP clauses and thread queries, math functions, safe attributes."""
    k, source = rms
    extra = ("// system(\"x\") and fopen in a comment are words, not calls\n"
             "#define TWICE(x) (2.0f * (x))\n"
             "__attribute__((always_inline)) static inline float half(float x) { return 0.5f * x; }\n")
    body = ('const char *note = "system fork exec"; (void)note; '
            "float t = TWICE(half(fmaf(1.0f, 2.0f, 3.0f))) + (float)omp_get_max_threads(); (void)t; "
            # given a value before it is read, members of a union, an array filled later
            "float r; if (bufs) r = 1.0f; else r = 2.0f; (void)r; "
            "union { uint32_t u; float f; } pun; pun.f = 1.0f; (void)pun; float arr[4]; (void)arr; "
            # output arguments, a member of the same name, a pragma naming it
            "int e; float m = frexpf(1.5f, &e); (void)m; (void)e; uint32_t u; __builtin_memcpy(&u, &m, 4); "
            "(void)u; ap_pair v = {1.0f, 2.0f}; float x; x = v.x * 2.0f; (void)x; float y;\n"
            "#pragma omp simd private(y)\n  for (int q = 0; q < 2; q++) { y = 1.0f; (void)y; }")
    # a struct right after an #include line; constants, a type's names, prototypes at file scope
    top = ("typedef struct { float x, y; } ap_pair;\nstatic const float ap_table[2] = {1.0f, 2.0f};\n"
           "typedef enum { AP_A, AP_B } ap_e;\nstruct ap_tag;\nfloat ap_twice(float);\n"
           "const float *const ap_first = ap_table;\nstatic float ap_twice(float x) { return 2 * x; }\n")
    body = ("static const float half_c = 0.5f; (void)half_c; extern float expf(float); "
            "static const int ap_n[2] = {1, 2}; (void)ap_n; struct { int n; } local = {0}; (void)local; ") + body
    verdict = static.check(extra + top + inside(source, body).replace(
        "#include <math.h>\n", "#include <math.h>\nstruct ap_ms { float m; float s; };\n"), "cpu", k.name)
    assert verdict.passed, verdict.reason


def test_compile_stage_records_rejections_and_never_builds_them(rms, tmp_path):
    k, source = rms
    cands = tmp_path / "candidates"
    bad = inside(source, 'system("id");')
    artifacts.write_text(cands / "good.c", source)
    artifacts.write_text(cands / "bad.c", bad)
    artifacts.write_json(cands / "index.json", {"backend": "cpu", "provider": "compiler", "candidates": [
        {"kernel": k.name, "variant": v, "provider": "compiler", "notes": "", "name": f"{k.name}.{v}",
         "file": f"{v}.c"} for v in ("good", "bad")]})
    compile_stage(str(cands), str(tmp_path / "build"), str(tmp_path / "compile.json"))
    good, rejected = json.loads((tmp_path / "compile.json").read_text())["candidates"]
    assert good["ok"] and good["static"] == {"passed": True}
    assert not rejected["ok"] and rejected["attempts"] == [] and rejected["library"] is None
    assert "uses system" in rejected["static"]["reason"]
    assert len(list((tmp_path / "build").glob("*.so"))) == 1


# -- building: the source's includes precompiled ---------------------------------------------------------


def machine_code(library: str) -> str:
    return subprocess.run(["objdump", "-d", library], capture_output=True, text=True, check=True).stdout.split("\n", 3)[3]


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump (binutils) reads the machine code")
def test_a_directory_that_gets_several_kernels_builds_them_against_their_includes_precompiled(rms, tmp_path,
                                                                                           monkeypatch):
    """The first PRELUDE_AFTER builds in a directory go without (a header costs about one build);
    the next makes the header and every later one uses it, to the same machine code."""
    k, source = rms
    variants = [source + f"// variant {i}\n" for i in range(cpu.PRELUDE_AFTER + 2)]
    builds = [cpu.build(v, tmp_path / "pre") for v in variants]
    assert all(b.ok for b in builds)
    assert ["-include" in b.command for b in builds] == [False] * cpu.PRELUDE_AFTER + [True, True]
    (header,) = [a for a in builds[-1].command if a.endswith(".h")]
    includes = [line for line in source.splitlines() if line.startswith("#include")]
    assert Path(header).read_text().splitlines() == includes and Path(f"{header}.gch").is_file()
    assert source.startswith("\n".join(includes))  # the prelude is the source's own first lines
    for made in (Path(header), Path(f"{header}.gch")):  # a cache emptied under a running process
        made.unlink()
    again = cpu.build(source + "// again\n", tmp_path / "pre")
    assert again.ok and "-include" in again.command and Path(f"{header}.gch").is_file()
    monkeypatch.setattr(cpu, "precompiled_prelude", lambda source, cache_dir, make: [])
    whole = cpu.build(variants[-1], tmp_path / "whole")
    assert whole.ok and "-include" not in whole.command
    assert machine_code(builds[-1].library) == machine_code(whole.library)


def test_a_prelude_that_does_not_compile_leaves_the_compilers_own_error(rms, tmp_path):
    _, source = rms
    missing = "#include <ap_no_such_header.h>\n" + source
    assert cpu.precompiled_prelude(missing, tmp_path) == []
    built = cpu.build(missing, tmp_path)
    assert not built.ok and "ap_no_such_header.h" in built.log
    assert cpu.precompiled_prelude("// no includes first\n" + source, tmp_path) == []


# -- the mlx backend: Python source --------------------------------------------------------------------

MLX_OPS = frozenset({Op.MUL, Op.SUM, Op.RSQRT, Op.ADD, Op.DIV})
GOOD_MLX = '''\
def k_demo(x, w):
    """rmsnorm in MLX ops"""
    ms = mx.sum(x * x, axis=-1, keepdims=True) / x.shape[-1]
    return x * mx.rsqrt(ms + 1e-6) * w
'''


def test_mlx_source_of_the_kernels_ops_passes():
    verdict = static.check(GOOD_MLX.replace("x.shape[-1]", "1024.0"), "mlx", "k_demo", MLX_OPS)
    assert verdict.passed, verdict.reason


@pytest.mark.parametrize("source, words", [
    (GOOD_MLX, "attribute .shape of something other than mx"),
    ("import os\n" + GOOD_MLX, "exactly one undecorated function"),
    ("def k_demo(x, w):\n    import os\n    return x", "Import is not allowed"),
    ("def k_demo(x, w):\n    return mx.exp(x) * w", "mx.exp is not among the kernel's ops"),
    ("def k_demo(x, w):\n    return mx.fast.rms_norm(x, w, 1e-6)", "attribute .rms_norm of something"),
    ("def k_demo(x, w):\n    return open('/etc/passwd')", "calls something other than an mx function"),
    ("def k_demo(x, w):\n    return __builtins__", "the name __builtins__"),
    ("def k_demo(x, w):\n    return x - w", "operator sub is not among"),
    ("def k_demo(x, w):\n    while True:\n        pass", "While is not allowed"),
    ("def k_demo(x, w):\n    return lambda: x", "Lambda is not allowed"),
    ("def k_other(x, w):\n    return x * w", "named k_demo"),
    ("def k_demo(x, w)\n    return x", "does not parse"),
])
def test_mlx_source_outside_the_allow_list_is_rejected(source, words):
    verdict = static.check(source, "mlx", "k_demo", MLX_OPS)
    assert not verdict.passed and words in verdict.reason, verdict


def test_every_kernel_op_names_an_mlx_function():
    missing = [op.value for op in ELEMENTWISE | REDUCE if not hasattr(mx, static.mlx_name(op))]
    assert not missing


def test_unknown_backend_is_rejected(rms):
    k, source = rms
    verdict = static.check(source, "tpu", k.name)
    assert not verdict.passed and "no static rules" in verdict.reason
