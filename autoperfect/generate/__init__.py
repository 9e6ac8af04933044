"""Generation: providers turn a KernelIR into candidate kernel sources for a backend.

Every provider sits strictly below KernelIR and is never trusted: the judge decides. Two kinds sit
behind `provider(name)`: the offline `compiler` renders candidates itself (`Provider`); a language
model (`anthropic`, or `replay` of its recorded replies) answers one prompt at a time
(`ChatProvider`) and `generate.loop` turns its replies into candidates, compiling and judging each.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Protocol

from ..kernel_ir import KernelIR

PROVIDERS = ("compiler", "anthropic", "replay")
# imported by name, so the offline stages neither import nor hash (provenance) the network code
CHAT_PROVIDERS = {"anthropic": "claude:AnthropicProvider", "replay": "replay:ReplayProvider"}


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


@dataclass(frozen=True)
class Request:
    """One prompt for one kernel; `call` names it within the kernel's log (e.g. `loop.r0.d1.t0`),
    which is also how a replay finds the reply recorded for it."""
    kernel: str
    call: str
    prompt: str


@dataclass(frozen=True)
class Reply:
    """What came back: the text, or `error` when every attempt failed (never an exception)."""
    text: str = ""
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None
    error: str | None = None
    attempts: tuple[dict, ...] = field(default=())   # one entry per HTTP try: outcome, wait

    def to_json(self) -> dict:
        return {"text": self.text, "model": self.model, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "stop_reason": self.stop_reason,
                "error": self.error, "attempts": list(self.attempts)}

    @staticmethod
    def from_json(d: dict) -> "Reply":
        return Reply(d["text"], d["model"], d["input_tokens"], d["output_tokens"], d["stop_reason"],
                     d["error"], tuple(d["attempts"]))


class ChatProvider(Protocol):
    name: str

    def complete(self, request: Request) -> Reply: ...


def provider(name: str, settings: dict | None = None) -> Provider | ChatProvider:
    if name == "compiler":
        from .compiler import CompilerProvider
        return CompilerProvider()
    if name in CHAT_PROVIDERS:
        module, _, cls = CHAT_PROVIDERS[name].partition(":")
        return getattr(importlib.import_module(f".{module}", __name__), cls)(settings or {})
    raise ValueError(f"unknown generator provider {name!r} (known: {', '.join(PROVIDERS)})")
