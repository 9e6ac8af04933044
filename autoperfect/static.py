"""Static checks: what a candidate's source may contain, decided before anything compiles.

A generated kernel is only ever built and run inside the judge's child process, but building it
already runs code (`__attribute__((constructor))` runs at load, `#include` reads files) and the
judge can only test what the kernel computes, not what else it does. So a source is read first:

- C family (`cpu`, `cuda`, `metal`): size limits, printable ASCII; only the headers the renderer
  emits; only the pragmas a kernel needs (cpu: `omp simd`, `omp parallel [for]`, `omp for`, `omp declare simd`,
  unroll); no inline assembly, `_Pragma`, token pasting, digraphs, unsafe attributes (a constructor
  runs at load, `optimize` turns on fast-math), function pointers or computed gotos; no name of a
  process, file, network, loader, environment, non-local-jump or clock function anywhere (a
  pointer to `system` is as bad as a call); no scalar local read before it is given a value (an
  uninitialized accumulator reads what its register held, which on a GPU was 0 in every run); no
  object of static or thread storage that can be written (a call counter that stops writing after
  the judge's few dozen calls passed every output check). Object-like macros are expanded first
  and `[[...]]` attributes refused, so `#define AP_EXPAND wordexp` or `[[gnu::constructor]]` hides
  nothing; the CPU's build also reads the library itself (backends/elf.py: no writable state, no
  import but math, OpenMP and the compiler's helpers, no code run at load). For
  `cpu`, which writes its own exported signature: every call is to a function the source defines,
  a math function, a few OpenMP and compiler builtins or the intrinsics the renderer writes
  (streaming stores, AVX-512 folds and vector groups, our inline exp), and the
  kernel is defined once with the ABI. (GPU sources are bodies inside a signature MLX writes and
  call device intrinsics not listed yet: they get the common rules only.)
- `mlx` (Python source): an AST allow-list: one function of the kernel's name, no imports, no
  attribute except `mx.<name>`, and no call the KernelIR does not contain.

A rejected source gets a `Verdict` whose reason names the line and the construct.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Iterable

from .backends.cfamily import FP_CONTRACT, OWN_MATH, SECTION, CRenderer
from .ops import ELEMENTWISE, REDUCE, Op

MAX_BYTES = 256 * 1024
MAX_LINES = 5000


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str = ""

    def to_json(self) -> dict:
        return {"passed": self.passed, **({"reason": self.reason} if self.reason else {})}


PASS = Verdict(True)


class Rejected(Exception):
    """Raised inside a check; becomes the verdict's reason."""


def check(source: str, backend: str, kernel: str, ops: Iterable[Op] | None = None) -> Verdict:
    """Whether `source` may be built as kernel `kernel` for `backend` (`ops`: the KernelIR's ops,
    needed by the `mlx` backend, whose calls must be among them)."""
    try:
        _check_text(source)
        if backend == "mlx":
            if ops is None:
                raise ValueError("the mlx backend's check needs the kernel's ops")
            _check_python(source, kernel, frozenset(ops))
        elif backend in C_RULES:
            _check_c(source, kernel, C_RULES[backend])
        else:
            raise Rejected(f"no static rules for backend {backend!r}")
    except Rejected as e:
        return Verdict(False, str(e))
    return PASS


def _check_text(source: str) -> None:
    size, lines = len(source.encode()), source.count("\n") + 1
    if size > MAX_BYTES:
        raise Rejected(f"source is {size} bytes, over the limit of {MAX_BYTES}")
    if lines > MAX_LINES:
        raise Rejected(f"source has {lines} lines, over the limit of {MAX_LINES}")
    for n, line in enumerate(source.splitlines(), 1):
        bad = next((ch for ch in line if not (ch.isascii() and (ch.isprintable() or ch == "\t"))), None)
        if bad is not None:
            raise Rejected(f"line {n}: character {bad!r} (sources are printable ASCII)")


# -- C family -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CRules:
    """What one C-family target may contain beyond the common rules."""
    includes: tuple[str, ...]   # exactly the headers the target's renderer emits (GPU: none, MLX's own)
    pragmas: re.Pattern
    exported: bool              # checked: the call allow-list and the kernel's exported ABI
    verbatim: tuple[str, ...] = ()  # `#pragma GCC optimize` lines allowed, exactly as written


UNROLL = r"|GCC unroll \d+|unroll( \d+)?"
# FMA contraction for one kernel (Schedule.contract) changes only rounding, which the judge checks;
# any other optimize string (fast-math, say) stays refused. These lines are checked as written
# (`_check_verbatim`), before string literals are emptied, and skipped by the checks after.
OPTIMIZE = re.compile(r"\s*#\s*pragma\s+GCC\s+optimize\b")
C_RULES = {
    "cpu": CRules(CRenderer.includes, re.compile(rf"(omp (simd|parallel for|parallel|for|declare simd){UNROLL})\b"),
                  True, (FP_CONTRACT,)),
    "cuda": CRules((), re.compile(rf"({UNROLL[1:]})\b"), False),
    "metal": CRules((), re.compile(rf"(METAL fp contract\(off\){UNROLL})"), False),
}
SAFE_DIRECTIVES = {"define", "undef", "if", "ifdef", "ifndef", "elif", "else", "endif"}

BANNED = {  # name -> what it gives a kernel that a kernel never needs
    **dict.fromkeys(("system", "popen", "fork", "vfork", "execl", "execle", "execlp", "execv", "execve",
                     "execvp", "execvpe", "fexecve", "posix_spawn", "posix_spawnp", "clone", "kill",
                     "raise", "abort", "exit", "_exit", "_Exit", "atexit", "ptrace", "signal",
                     "sigaction", "pthread_create"), "process control"),
    **dict.fromkeys(("fopen", "freopen", "fdopen", "open", "openat", "creat", "read", "write", "pread",
                     "pwrite", "close", "unlink", "remove", "rename", "mkdir", "rmdir", "fread", "fwrite",
                     "fprintf", "printf", "puts", "fputs", "stat", "chmod", "truncate", "ftruncate"),
                    "file access"),
    **dict.fromkeys(("socket", "connect", "bind", "listen", "accept", "send", "sendto", "recv",
                     "recvfrom", "getaddrinfo", "gethostbyname"), "network access"),
    **dict.fromkeys(("mmap", "munmap", "mprotect", "madvise", "brk", "sbrk", "dlopen", "dlsym", "dlclose",
                     "dlmopen"), "memory mapping or dynamic loading"),
    **dict.fromkeys(("syscall", "getenv", "secure_getenv", "setenv", "putenv", "unsetenv", "environ",
                     "ioctl", "prctl"), "system calls or the environment"),
    **dict.fromkeys(("setjmp", "longjmp", "sigsetjmp", "siglongjmp", "_setjmp", "_longjmp"),
                    "non-local jumps"),
    **dict.fromkeys(("asm", "__asm", "__asm__", "_Pragma"), "inline assembly or hidden pragmas"),
    **dict.fromkeys(("time", "clock", "rand", "srand", "random"), "nondeterminism"),
    **dict.fromkeys(("_Thread_local", "__thread", "thread_local", "threadprivate", "__managed__"),
                    "state kept between calls"),
}
ATTRIBUTES = {"aligned", "always_inline", "noinline", "unused", "hot", "cold", "flatten", "pure", "const",
              "nonnull", "vector_size", "may_alias", "target", "noclone", "__aligned__", "__always_inline__",
              "__vector_size__", "__target__"}
MATH = {f + s for f in ("sqrt", "fabs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow",
                        "tanh", "sinh", "cosh", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
                        "erf", "erfc", "floor", "ceil", "round", "trunc", "rint", "nearbyint", "lrint",
                        "fma", "fmax", "fmin", "fmod", "copysign", "ldexp", "frexp", "cbrt", "hypot", "nan",
                        "nextafter", "nexttoward", "scalbn", "ilogb", "logb", "remainder", "lround", "llround",
                        "llrint", "fdim")
        for s in ("f", "")} | {"isnan", "isinf", "isfinite", "signbit", "fpclassify"}
OPENMP = {"omp_get_thread_num", "omp_get_num_threads", "omp_get_max_threads"}
OURS = set(OWN_MATH.values())  # our vector math (backends/vmath.c), linked in by cpu.build
BUILTINS = {"__builtin_expect", "__builtin_assume_aligned", "__builtin_prefetch", "__builtin_unreachable",
            "__builtin_memcpy", "__builtin_memset", "__builtin_isnan", "__builtin_isinf", "__builtin_inff",
            "__builtin_nanf", "__builtin_huge_valf"} | {f"__builtin_{m}" for m in MATH}
# streaming (non-temporal) stores and the fence that orders them, the fold of a split sum's partials
# (CRenderer.combine_lanes), and the AVX-512 arithmetic of vector groups (CRenderer.vector_groups)
# and of our inline exp (backends/vmath_avx512.h): the renderer's only intrinsics
INTRINSICS = {"_mm512_stream_ps", "_mm512_load_ps", "_mm256_stream_ps", "_mm256_load_ps", "_mm_stream_ps",
              "_mm_load_ps", "_mm_sfence",
              "_mm512_reduce_add_ps", "_mm512_add_ps", "_mm512_loadu_ps", "_mm512_storeu_ps",
              "_mm512_set1_ps", "_mm512_max_ps", "_mm512_min_ps", "_mm512_abs_ps", "_mm512_sqrt_ps",
              "_mm512_mul_ps", "_mm512_fmadd_ps", "_mm512_fnmadd_ps", "_mm512_roundscale_ps",
              "_mm512_scalef_ps", "_mm512_sub_ps", "_mm512_div_ps", "_mm512_and_ps", "_mm512_andnot_ps",
              "_mm512_or_ps",
              # float16 staged through float buffers (cfamily.STAGING)
              "_mm512_cvtph_ps", "_mm512_cvtps_ph", "_mm512_store_ps", "_mm256_loadu_si256", "_mm256_storeu_si256",
              "_mm256_cvtph_ps", "_mm256_cvtps_ph", "_mm256_store_ps", "_mm_loadu_si128", "_mm_storeu_si128",
              # bfloat16 in vector groups (cfamily.BF16_VECTOR_LOAD, BF16_VECTOR, VECTOR_STORES)
              "_mm512_castps_si512", "_mm512_castsi512_ps", "_mm512_cvtepu16_epi32", "_mm512_cvtepi32_epi16",
              "_mm512_slli_epi32", "_mm512_srli_epi32", "_mm512_and_si512", "_mm512_add_epi32",
              "_mm512_mask_or_epi32", "_mm512_cmp_ps_mask", "_mm512_set1_epi32",
              "_mm512_fpclass_ps_mask", "_mm512_cvtneps_pbh",
              # the sigmoid's select (vmath_avx512.h's ap_sigmoidf_v16)
              "_mm512_mask_blend_ps"}
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "_Alignof", "alignof", "_Alignas",
            "_Static_assert", "_Generic", "defined", "__typeof__", "typeof"}
OMP_CLAUSES = re.compile(r"\b(reduction|schedule|num_threads|private|firstprivate|lastprivate|shared|default|"
                         r"collapse|aligned|simdlen|safelen|linear|uniform|if|proc_bind)\s*\(")

IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
DEFINITION = re.compile(r"\b([A-Za-z_]\w*)\s*\(([^()]*)\)\s*\{")
# a #define: its name, a function-like macro's parameters (None: object-like) and its body
MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^()]*\))?(.*)$", re.M)
FUNCTION_POINTER = re.compile(r"\(\s*\*\s*\w*\s*\)\s*\(|\bgoto\s*\*")
ABI = re.compile(r"void\s*\*\s*\*\s*(restrict\s+)?\w+\s*,\s*const\s+int64_t\s*\*\s*(restrict\s+)?\w+\s*,"
                 r"\s*const\s+int64_t\s*\*\s*(restrict\s+)?\w+")
DIGRAPH = re.compile(r"<%|%>|<:|:>|%:|\?\?[=/'()!<>-]")


def _strip(source: str) -> str:
    """The source with line continuations joined (as the preprocessor does first, so a banned name
    can't be split across lines), comments blanked and string/char literals emptied."""
    text = source.replace("\\\n", "")
    out, i, n = [], 0, len(text)
    while i < n:
        two = text[i:i + 2]
        if two == "//":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif two == "/*":
            j = text.find("*/", i + 2)
            if j < 0:
                raise Rejected("unterminated comment")
            out.append(" " + "\n" * text.count("\n", i, j))
            i = j + 2
        elif text[i] in "\"'":
            quote, j = text[i], i + 1
            while j < n and text[j] != quote:
                if text[j] == "\n":
                    raise Rejected(f"line {text.count(chr(10), 0, i) + 1}: unterminated literal")
                j += 2 if text[j] == "\\" else 1
            out.append('""' if quote == '"' else "0")
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _expand_objects(code: str) -> str:
    """Object-like macros' names replaced by their bodies, a few rounds (as the preprocessor would),
    so the checks see what `#define AP_EXPAND wordexp` or `#define A __attribute__` hides. Line by
    line, lines kept: a `#define` keeps its own name and the other directives are left as written."""
    lines = code.split("\n")
    macros = {m.group(1): m.group(3).strip() for m in map(MACRO.match, lines) if m and m.group(2) is None}
    if not macros:
        return code
    name = re.compile(r"\b(" + "|".join(map(re.escape, macros)) + r")\b")
    for _ in range(8):
        expanded = []
        for line in lines:
            head = MACRO.match(line)  # its name and parameters stay; its body is expanded
            start = head.start(3) if head else len(line) if line.lstrip().startswith("#") else 0
            expanded.append(line[:start] + name.sub(lambda m: macros[m.group(1)], line[start:]))
        if expanded == lines:
            break
        lines = expanded
    return "\n".join(lines)


def _line(code: str, pos: int) -> int:
    return code.count("\n", 0, pos) + 1


def _check_c(source: str, kernel: str, rules: CRules) -> None:
    _check_verbatim(source, rules)
    code = _expand_objects(_strip(source))
    m = re.search(r"\[\s*\[", code)
    if m:
        raise Rejected(f"line {_line(code, m.start())}: a [[...]] attribute (only __attribute__((...)) from the "
                       f"safe list: {', '.join(sorted(a for a in ATTRIBUTES if not a.startswith('_')))})")
    code = _without_attributes(code)
    # a GPU source's body goes inside the signature MLX writes: its statements are the kernel's own
    # (the checks above keep the lines where they were)
    marker = source.find("\n" + SECTION.format("body") + "\n")
    body_at = len(code)
    if marker >= 0 and not rules.exported:
        lines = code.split("\n")
        body_at = sum(len(line) + 1 for line in lines[:_strip(source[:marker + 1]).count("\n")])
    m = DIGRAPH.search(code)
    if m:
        raise Rejected(f"line {_line(code, m.start())}: digraph or trigraph {m.group()!r}")
    for n, line in enumerate(code.splitlines(), 1):
        _check_directive(n, line.strip(), rules)
    for m in IDENT.finditer(code):
        if m.group() in BANNED:
            raise Rejected(f"line {_line(code, m.start())}: uses {m.group()} ({BANNED[m.group()]})")
    m = FUNCTION_POINTER.search(code)
    if m:
        raise Rejected(f"line {_line(code, m.start())}: a function pointer or computed goto")
    _check_initialized(code)
    _check_no_state(code, body_at)
    if rules.exported:
        _check_calls(code)
        _check_kernel_definition(code, kernel)


SCALAR = re.compile(r"(?:(?:const|volatile|register)\s+)*(?:(?:unsigned|signed)\s+)?"
                    r"(?:float|double|half|bfloat|__half|__nv_bfloat16|bfloat16_t|int|long|short|char|bool|uint|"
                    r"u?int(?:8|16|32|64)_t|size_t|ptrdiff_t)\b(?:\s+(?:int|long))*(?P<declarators>[*\s]*+[A-Za-z_].*)",
                    re.S)
AGGREGATE = re.compile(r"\s*(template\s*<[^{}]*>\s*)?(typedef\s+)?(struct|union|class|enum)\b")
DIRECTIVE_LINE = re.compile(r"(?m)^[ \t]*#.*$")
DECLARATOR = re.compile(r"[*\s]*(?:(?:restrict|__restrict__|__restrict|const|volatile)\b[*\s]*)*([A-Za-z_]\w*)\s*(\S?)")


def _statements(code: str):
    """Each statement of `code` (directive lines blanked) as (text, start, closer, kind, end, type):
    the text before the `;` or `{` that ends it, where it starts, that character, the kind of scope
    it is in ("file", "block" or "members": a type's fields) and where that scope ends, and for the
    text right after a type's closing brace (`} name;`, which declares objects of that type) the
    type's opening statement, else None. A namespace's or `extern "C"`'s braces keep file scope."""
    code = DIRECTIVE_LINE.sub(lambda m: " " * len(m.group()), code)  # same offsets, same line numbers
    closes, open_at = {}, []  # each brace's matching close
    for m in re.finditer(r"[{}]", code):
        if m.group() == "{":
            open_at.append(m.start())
        elif open_at:
            closes[open_at.pop()] = m.start()
    start, scopes, after = 0, [("file", len(code), "")], None
    for m in re.finditer(r"[;{}]", code):
        text, at = code[start:m.start()], start
        start = m.end()
        if m.group() == "}":
            closed = scopes.pop() if len(scopes) > 1 else scopes[0]
            after = closed[2] if closed[0] == "members" else None
            continue
        kind, end, _ = scopes[-1]
        yield text, at, m.group(), kind, end, after
        after = None
        if m.group() == "{":
            inner = "members" if AGGREGATE.match(text) else \
                "file" if kind == "file" and FILE_BLOCK.match(text) else "block"
            scopes.append((inner, closes.get(m.start(), len(code)), text))


def _check_initialized(code: str) -> None:
    """Every scalar (or pointer) local declared without a value is assigned one before it is read
    (`_assigned_first`). An accumulator declared bare reads whatever its register held; on a GPU
    that was 0 in every run (H200, 2026-12-01: the planted uninitialized accumulator passed every
    output check), so no test of what a kernel computes can see it. A heuristic on the text, not a
    data-flow analysis: it looks at the first use in the enclosing block only. Not checked: arrays
    and vector structs (filled by loops and loads), the members of a struct or union (a type's
    fields), file-scope variables (refused unless constant: `_check_no_state`), `__shared__`/`threadgroup` variables (which
    cannot be initialized where declared) and preprocessor lines (blanked first: a pragma's
    `private(x)` is no read)."""
    code = DIRECTIVE_LINE.sub(lambda m: " " * len(m.group()), code)
    for statement, start_at, _, kind, end, _ in _statements(code):
        if kind != "block":
            continue
        start = start_at + len(statement) + 1
        d = SCALAR.fullmatch(statement.strip())
        if not d:
            continue
        for declarator in _top_level_split(d.group("declarators")):
            name = DECLARATOR.match(declarator)  # an initializer, an array or a function: not bare
            if name is None or name.group(2) in ("=", "[", "(", "{") \
                    or _assigned_first(code, name.group(1), start, end):
                continue
            line = _line(code, start_at + len(statement) - len(statement.lstrip()))
            raise Rejected(f"line {line}: {' '.join(statement.split())} declares {name.group(1)} without a value "
                           "and reads it before it is given one (an uninitialized variable reads whatever its "
                           "register holds, which an output check may never see)")


STORAGE = re.compile(r"\b(static|extern)\b")
FILE_BLOCK = re.compile(r"\s*(namespace\b|extern\s*\"\")")
PER_LAUNCH = re.compile(r"\b(__shared__|threadgroup)\b")   # a GPU block's memory, new in each launch
CONSTANT = re.compile(r"\b(const|constexpr|__constant__|constant)\b")
DEVICE_OBJECT = re.compile(r"\b__device__\b")
TEMPLATE = re.compile(r"\s*template\s*<")
STATE = ("keeps state between calls: an object of static storage that a kernel can write (a counter "
         "or a cache kept from one call to the next can change what it computes after the judge has "
         "run it; a kernel's only state is its buffers)")


def _check_no_state(code: str, body_at: int) -> None:
    """No object of static storage that the kernel can write: at file scope only functions, types
    and constants; in a function (and in a GPU source's body, from `body_at` on, which goes inside
    the signature MLX writes) no `static` or `extern` object unless constant, or a GPU block's
    shared memory (new in each launch). A constant object holds no pointer that can be changed
    (`const float *p` can). A macro holding a storage class would hide one from this check and is
    refused; so are thread-local storage, OpenMP's threadprivate and CUDA's managed memory
    (BANNED). The machine code is checked as well where it can be read (backends/elf.py)."""
    for m in MACRO.finditer(code):
        if STORAGE.search(m.group()):
            raise Rejected(f"line {_line(code, m.start())}: a macro holding a storage class "
                           f"({' '.join(m.group().split())}) hides what it declares from these checks")
    for text, at, closer, kind, _, after in _statements(code):
        words = " ".join(text.split())
        if not words and after is None or _stateless(words, closer, kind == "file" and at < body_at, after):
            continue
        line = _line(code, at + len(text) - len(text.lstrip()))
        shown = words or f"}} closing {' '.join(after.split())} {{...}}"
        raise Rejected(f"line {line}: {shown} {STATE}")


def _stateless(words: str, closer: str, file: bool, after: str | None) -> bool:
    """Whether one statement (ended by `closer`) declares no object of static storage that can be
    written: at file scope a function, a type, a namespace or a constant (after a type's closing
    brace: no object, a typedef's names or constants); elsewhere anything but a `static` or
    `extern` object that is neither constant nor a GPU block's shared memory (a method's
    definition, an extern function's prototype)."""
    decl, initialized = _declaration(words)
    if after is not None:
        whole = f"{' '.join(after.split())} {words}"
        return not words or not file and not STORAGE.search(whole) or bool(AGGREGATE.match(after).group(2)) \
            or _constant(whole)
    if not file:
        return not STORAGE.search(decl) or bool(PER_LAUNCH.search(decl)) or _constant(decl) \
            or not initialized and decl.endswith(")") and (closer == "{" or not re.search(r"\bstatic\b", decl))
    if decl.startswith("typedef ") or AGGREGATE.match(decl) and (closer == "{" or len(decl.split()) <= 2):
        return True
    if not initialized and decl.endswith(")") and not (closer == ";" and DEVICE_OBJECT.search(decl)):
        return True  # a function's definition or prototype (a device object's direct-init is refused)
    return closer == "{" and bool(FILE_BLOCK.match(decl)) or _constant(decl)


def _declaration(words: str) -> tuple[str, bool]:
    """A declaration without a leading `template <...>` and without its initializer (the text
    before the first `=` outside parentheses and brackets), and whether it had one."""
    if TEMPLATE.match(words):
        depth, i = 0, words.index("<")
        for i in range(i, len(words)):
            depth += {"<": 1, ">": -1}.get(words[i], 0)
            if depth == 0:
                break
        words = words[i + 1:].strip()
    depth = 0
    for i, ch in enumerate(words):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if ch == "=" and depth == 0 and words[i + 1:i + 2] != "=" and words[i - 1:i] not in ("=", "!", "<", ">"):
            return words[:i].strip(), True
    return words, False


def _constant(decl: str) -> bool:
    """Whether a declaration's objects are constant: a const qualifier and no pointer that is not
    itself const."""
    return bool(CONSTANT.search(decl)) and not re.search(r"\*(?!\s*const\b)", decl)


def _assigned_first(code: str, name: str, pos: int, end: int) -> bool:
    """Whether the first use of `name` in code[pos:end] is not a read: a plain assignment that does
    not read it, or its address taken (`&name`: an output argument, as of frexpf or memcpy). The
    textual order, not every path (a value assigned in both branches of an if passes; so does one
    assigned in only one of them, which no check of the text can rule out). A member (`v.name`,
    `p->name`, `ns::name`) is another variable."""
    use = re.compile(rf"(?<![\w.])(?<!->)(?<!::)(&\s*)?\b{re.escape(name)}\b")
    first = use.search(code, pos, end)
    if first is None or first.group(1):
        return True
    m = re.compile(rf"{re.escape(name)}\s*=(?!=)([^;]*);").match(code, first.start(), end)
    return bool(m) and not use.search(m.group(1))


def _top_level_split(text: str) -> list[str]:
    """`text` split at the commas outside parentheses, brackets and braces."""
    parts, depth, last = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(text[last:i])
            last = i + 1
    return parts + [text[last:]]


def _check_calls(code: str) -> None:
    defined = {d.group(1) for d in DEFINITION.finditer(code)} | {m.group(1) for m in MACRO.finditer(code)}
    allowed = defined | MATH | OURS | OPENMP | BUILTINS | INTRINSICS | KEYWORDS
    # an OpenMP clause such as reduction(+:a) is no call, nor is GCC optimize ("...") (_check_verbatim's)
    code = re.sub(r"(?m)^[ \t]*#[ \t]*pragma\b.*$", lambda p: "" if OPTIMIZE.match(p.group())
                  else OMP_CLAUSES.sub(",(", p.group()), code)
    for m in CALL.finditer(code):
        if m.group(1) not in allowed:
            raise Rejected(f"line {_line(code, m.start())}: calls {m.group(1)}, which is neither defined in "
                           "the source nor an allowed math, OpenMP or compiler function")


def _check_verbatim(source: str, rules: CRules) -> None:
    """Every `#pragma GCC optimize` is one the target allows, word for word: the checks below see
    its string emptied."""
    for n, line in enumerate(source.replace("\\\n", "").splitlines(), 1):
        if OPTIMIZE.match(line) and line.strip() not in rules.verbatim:
            allowed = ", ".join(rules.verbatim) or "none"
            raise Rejected(f"line {n}: {line.strip()} (allowed: {allowed})")


def _check_directive(n: int, line: str, rules: CRules) -> None:
    if not line.startswith("#"):
        return
    m = re.match(r"#\s*(\w*)\s*(.*)", line)
    name, rest = m.group(1), " ".join(m.group(2).split())
    if name == "include":
        header = re.fullmatch(r"<([\w./]+)>", rest)
        if not header or header.group(1) not in rules.includes:
            allowed = ", ".join(f"<{h}>" for h in rules.includes) or "none"
            raise Rejected(f"line {n}: #include {rest} (allowed: {allowed})")
    elif name == "pragma":
        if not OPTIMIZE.match(line) and not rules.pragmas.match(rest):  # optimize: _check_verbatim's
            raise Rejected(f"line {n}: #pragma {rest} (allowed: {rules.pragmas.pattern})")
    elif name not in SAFE_DIRECTIVES:
        raise Rejected(f"line {n}: the #{name} directive")
    elif "#" in rest:
        raise Rejected(f"line {n}: token pasting or stringizing in a macro")


def _without_attributes(code: str) -> str:
    """`__attribute__((...))` blanked out after checking each attribute against the safe list (a
    constructor or destructor runs at load time; `optimize` can turn on fast-math)."""
    out, start = [], 0
    for m in re.finditer(r"\b__attribute__\s*\(", code):
        if m.start() < start:
            continue
        depth, j = 0, m.end() - 1
        while j < len(code):
            depth += {"(": 1, ")": -1}.get(code[j], 0)
            if depth == 0:
                break
            j += 1
        body = code[m.end():j]
        for name in re.findall(r"\b([A-Za-z_]\w*)\s*(?:\(|,|\)|$)", body):
            if name not in ATTRIBUTES:
                raise Rejected(f"line {_line(code, m.start())}: __attribute__(({name}))")
        out.append(code[start:m.start()] + " " * (j + 1 - m.start()))
        start = j + 1
    return "".join(out) + code[start:]


def _check_kernel_definition(code: str, kernel: str) -> None:
    if re.search(rf"#\s*(define|undef)\s+{kernel}\b", code):
        raise Rejected(f"a macro renames the kernel function {kernel}")
    defs = [d for d in DEFINITION.finditer(code) if d.group(1) == kernel]
    abi = f"void {kernel}(void **bufs, const int64_t *dims, const int64_t *strides)"
    if not defs:
        raise Rejected(f"does not define the kernel function {kernel} (expected {abi})")
    if len(defs) > 1:
        raise Rejected(f"defines {kernel} {len(defs)} times")
    d = defs[0]
    before = code[:d.start()]
    head = [t for line in before[max(before.rfind(c) for c in ";{}") + 1:].splitlines()
            if not line.strip().startswith("#") for t in line.split()]
    if head != ["void"] or not ABI.fullmatch(d.group(2).strip()):
        written = f"{' '.join(head)} {kernel}({' '.join(d.group(2).split())})"
        raise Rejected(f"line {_line(code, d.start())}: {written} is not the ABI {abi} (exported)")


# -- mlx: Python source ---------------------------------------------------------------------------------

MLX_NAME = {Op.NEG: "negative", Op.SUB: "subtract", Op.MUL: "multiply", Op.DIV: "divide"}  # else op.value
MLX_DTYPES = {"float32", "float16", "bfloat16", "int32", "bool_"}
OPERATORS = {ast.Add: Op.ADD, ast.Sub: Op.SUB, ast.Mult: Op.MUL, ast.Div: Op.DIV, ast.Pow: Op.POW,
             ast.USub: Op.NEG, ast.Lt: Op.LT, ast.LtE: Op.LE, ast.Gt: Op.GT, ast.GtE: Op.GE, ast.Eq: Op.EQ,
             ast.NotEq: Op.NE, ast.BitAnd: Op.AND, ast.BitOr: Op.OR, ast.Invert: Op.NOT}
PY_NODES = (ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Assign, ast.Expr, ast.Name,
            ast.Load, ast.Store, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Call, ast.keyword,
            ast.Attribute, ast.Subscript, ast.Slice, ast.Tuple, ast.IfExp) + tuple(OPERATORS)


def mlx_name(op: Op) -> str:
    return MLX_NAME.get(op, op.value)


def _check_python(source: str, kernel: str, ops: frozenset[Op]) -> None:
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise Rejected(f"line {e.lineno}: does not parse ({e.msg})") from None
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(tree.body) != 1 or len(fns) != 1 or fns[0].name != kernel or fns[0].decorator_list:
        raise Rejected(f"the source must be exactly one undecorated function named {kernel}")
    calls = {mlx_name(op) for op in ops if op in ELEMENTWISE or op in REDUCE}
    params = {a.arg for a in fns[0].args.args}
    local = params | {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign)
                      for target in n.targets for t in ast.walk(target) if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        where = f"line {getattr(node, 'lineno', '?')}"
        if not isinstance(node, PY_NODES):
            raise Rejected(f"{where}: {type(node).__name__} is not allowed")
        for operator in _operators(node):
            if OPERATORS[type(operator)] not in ops:
                raise Rejected(f"{where}: the operator {OPERATORS[type(operator)].value} is not among the "
                               "kernel's ops")
        if isinstance(node, ast.Attribute):
            if not (isinstance(node.value, ast.Name) and node.value.id == "mx"):
                raise Rejected(f"{where}: attribute .{node.attr} of something other than mx")
            if node.attr not in calls | MLX_DTYPES:
                raise Rejected(f"{where}: mx.{node.attr} is not among the kernel's ops")
        if isinstance(node, ast.Call) and not isinstance(node.func, ast.Attribute):
            raise Rejected(f"{where}: calls something other than an mx function")
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local | {"mx"}:
            raise Rejected(f"{where}: the name {node.id} (only parameters, locals and mx)")


def _operators(node: ast.AST) -> list[ast.AST]:
    """The operators a node applies to arrays (a minus sign on a literal, as in axis=-1, is none)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return []
    if isinstance(node, (ast.BinOp, ast.UnaryOp)):
        return [node.op]
    return list(node.ops) if isinstance(node, ast.Compare) else []
