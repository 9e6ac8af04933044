"""What a built kernel library holds, read from its ELF tables with binutils' objdump: the
machine-code side of the static checks, which no spelling of the source can hide from.

A kernel computes its outputs from its buffers and nothing else. Its library must therefore hold,
beyond what an empty library built the same way holds (the C runtime's own):
- no object of static storage it can write (`.data`, `.bss` and their thread-local twins): a
  counter kept between calls let a kernel stop writing after the judge's few dozen calls;
- no imported function but the math library's (scalar and libmvec's vector forms), OpenMP's
  runtime, the compiler's own memory helpers and stack guard: `#define AP_EXPAND wordexp` then
  `AP_EXPAND(...)` ran a shell command from a kernel that passed the text's checks;
- no code run at load (`.init_array`, `.fini_array` and their older forms no longer than the
  empty library's): `[[gnu::constructor]]` had slipped past the check of `__attribute__`.
Where binutils can't read a library, nothing is refused here (the text's checks still stand).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass

from .. import run
from ..static import MATH

# The sections a program writes (thread-local ones too); .data.rel.ro is written only by the loader
WRITABLE = re.compile(r"\.(t?data|t?bss)(?!\.rel\.ro)(\..*)?|\*COM\*")
SYMBOL = re.compile(r"[0-9a-fA-F]+ .{7} (\S+)\s+[0-9a-fA-F]+\s+(\S+)$")
SECTION = re.compile(r"\s*\d+\s+(\S+)\s+([0-9a-fA-F]+)\s")
AT_LOAD = (".init_array", ".fini_array", ".ctors", ".dtors", ".preinit_array")
# functions a kernel may import besides the empty library's: the math library's, their libmvec
# vector forms (_ZGV<isa><mask><lanes><args>_<name>), OpenMP's runtime (GOMP_*: the outlined
# parallel regions, barriers and loops the pragmas compile to; three thread queries) and what the
# compiler calls on its own (memory helpers, the stack protector's failure)
IMPORTS = re.compile(r"GOMP_\w+|omp_get_(thread_num|num_threads|max_threads)|mem(cpy|set|move)|__stack_chk_fail"
                     r"|_ZGV[a-z][NM]\d+[vlu]+_(?P<vector>\w+)|(?P<scalar>\w+)")


@dataclass(frozen=True)
class Contents:
    writable: tuple[str, ...]     # objects in sections a program writes, by symbol
    imports: frozenset[str]       # undefined dynamic symbols, without their versions
    at_load: int                  # bytes of load-time and exit-time code pointers


def read(library: str) -> Contents | None:
    """The library's writable objects, imports and load-time tables (one objdump of its section
    headers, symbols and dynamic symbols), or None where binutils can't read it."""
    dump = _tool("OBJDUMP", "objdump", "-h", "-t", "-T", library)
    if dump is None:
        return None
    headers, _, rest = dump.partition("\nSYMBOL TABLE:\n")
    symbols, _, dynamic = rest.partition("\nDYNAMIC SYMBOL TABLE:\n")
    writable = [m.group(2) for m in map(SYMBOL.match, symbols.splitlines()) if m and WRITABLE.fullmatch(m.group(1))]
    sections = [m.groups() for m in map(SECTION.match, headers.splitlines()) if m]
    at_load = sum(int(size, 16) for name, size in sections if name in AT_LOAD)
    imports = frozenset(line.split()[-1] for line in dynamic.splitlines() if "*UND*" in line)
    return Contents(tuple(writable), imports, at_load)


def refusal(library: str, empty: Contents | None) -> str:
    """Why `library` may not run as a kernel, measured against `empty` (an empty library built the
    same way), or "" where it may (or where either can't be read)."""
    own = read(library)
    if own is None or empty is None:
        return ""
    kept = sorted((Counter(own.writable) - Counter(empty.writable)).elements())
    if kept:
        return (f"the library keeps state between calls in {', '.join(kept)}: objects of static storage the "
                "kernel can write (a counter or a cache kept from one call to the next can change what a "
                "kernel computes after the judge has run it; a kernel's only state is its buffers)")
    foreign = sorted(f for f in own.imports - empty.imports if not _allowed(f))
    if foreign:
        return (f"the library calls {', '.join(foreign)}, which no kernel needs (allowed: the math library, "
                "OpenMP's runtime and the compiler's memory helpers)")
    if own.at_load > empty.at_load:
        return (f"the library runs code when it is loaded or unloaded ({own.at_load - empty.at_load} more bytes "
                "of .init_array/.fini_array than an empty library: a constructor or destructor)")
    return ""


def _allowed(name: str) -> bool:
    m = IMPORTS.fullmatch(name)
    function = m and (m.group("vector") or m.group("scalar"))
    return bool(m) and (function is None or function in MATH)


def _tool(variable: str, default: str, *args: str) -> str | None:
    try:
        done = run([os.environ.get(variable, default), *args], capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None
