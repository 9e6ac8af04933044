"""The default provider: our own deterministic lowering, one candidate per schedule variant."""

from __future__ import annotations

from .. import backends
from ..kernel_ir import KernelIR
from . import Candidate


class CompilerProvider:
    name = "compiler"

    def generate(self, kernel: KernelIR, backend: str) -> list[Candidate]:
        be = backends.get(backend)
        return [Candidate(kernel.name, s.name, be.render(kernel, s), self.name, repr(s))
                for s in be.schedules_for(kernel)]
