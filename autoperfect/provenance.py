"""What a stage's output depends on in our own code: a hash of the modules it imports, transitively.

Snakemake never sees changes inside an installed package; passing this hash through `params:`
reruns exactly the stages whose code changed.
"""

from __future__ import annotations

import ast
import hashlib
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _module_file(name: str) -> Path | None:
    parts = name.split(".")[1:]
    if not parts:
        return PACKAGE / "__init__.py"
    rel = Path(*parts)
    for candidate in (PACKAGE / rel.with_suffix(".py"), PACKAGE / rel / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@lru_cache(maxsize=None)
def _imports(path: Path, name: str) -> frozenset[str]:
    """Package modules `path` imports (absolute `autoperfect.x` or relative `.x`, `..x`); parsed
    once per process, however many closures reach it (the cache's compiler version takes four)."""
    is_pkg = path.name == "__init__.py"
    parts = name.split(".") if is_pkg else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[: len(parts) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] == "autoperfect":
                out.add(mod)
                out.update(f"{mod}.{a.name}" for a in node.names)  # `from . import cpu`
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "autoperfect")
    return frozenset(m for m in out if _module_file(m) is not None)


@lru_cache(maxsize=None)
def closure(name: str) -> tuple[str, ...]:
    seen, stack = set(), [name]
    while stack:
        m = stack.pop()
        if m in seen:
            continue
        seen.add(m)
        path = _module_file(m)
        if path is not None:
            stack.extend(_imports(path, m) - seen)
    return tuple(sorted(seen))


def stage_hash(*modules: str) -> str:
    """sha256 over the source of `modules` and every package module they import."""
    h = hashlib.sha256()
    names = sorted({m for mod in modules for m in closure(mod)})
    for m in names:
        path = _module_file(m)
        if path is not None:
            h.update(m.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]
