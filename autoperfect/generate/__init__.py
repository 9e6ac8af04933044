"""Generation: providers turn a KernelIR into candidate kernel sources for a backend.

Every provider sits strictly below KernelIR and is never trusted: the judge decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..kernel_ir import KernelIR

PROVIDERS = ("compiler", "anthropic", "replay")


@dataclass(frozen=True)
class Candidate:
    kernel: str      # the KernelIR name it implements
    variant: str     # schedule or draft name
    source: str
    provider: str
    notes: str = ""

    @property
    def name(self) -> str:
        return f"{self.kernel}.{self.variant}"

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "variant": self.variant, "provider": self.provider,
                "notes": self.notes, "name": self.name}


class Provider(Protocol):
    name: str

    def generate(self, kernel: KernelIR, backend: str) -> list[Candidate]: ...


def provider(name: str, settings: dict | None = None) -> Provider:
    if name == "compiler":
        from .compiler import CompilerProvider
        return CompilerProvider()
    if name in PROVIDERS:
        raise ValueError(f"generator provider {name!r} is not available in this version (available: compiler)")
    raise ValueError(f"unknown generator provider {name!r} (known: {', '.join(PROVIDERS)})")
