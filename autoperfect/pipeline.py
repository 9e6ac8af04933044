"""The stages as functions: what each Snakemake script calls, and what the judge and the runtime
reuse to compile an op at another shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .canon import canonicalize
from .fuse import Partition, fuse
from .graph import Graph, GraphError
from .kernel_ir import KernelIR, KernelIRError, lower
from .program import Program, Step
from .spec import OpSpec, SpecError
from .trace import TraceError, trace


def trace_op(spec: OpSpec) -> Graph:
    """Trace an op spec; a failure is a SpecError naming the op and field `fn`."""
    fn = spec.function()
    try:
        return trace(fn, [(i.name, i.shape, i.dtype) for i in spec.inputs], spec.name)
    except (TraceError, GraphError) as e:
        raise SpecError(spec.name, "fn", f"tracing failed: {e}") from None


@dataclass(frozen=True)
class Front:
    """Everything from the spec down to KernelIR, for one set of input shapes."""
    traced: Graph
    canonical: Graph
    partition: Partition
    kernels: tuple[KernelIR | None, ...]  # per region; None where the region is left to MLX


def front(spec: OpSpec) -> Front:
    traced = trace_op(spec)
    canonical = canonicalize(traced)
    partition = fuse(canonical)
    return Front(traced, canonical, partition, lower_all(partition))


def lower_all(partition: Partition) -> tuple[KernelIR | None, ...]:
    out = []
    for region in partition.regions:
        try:
            out.append(lower(partition, region) if region.kind == "kernel" else None)
        except KernelIRError as e:
            raise SpecError(partition.graph.name, "fn", f"region {region.index} could not be lowered: {e}") from None
    return tuple(out)


def program(f: Front, loaded: Mapping[str, object]) -> Program:
    """A runnable program; `loaded` maps kernel names to loaded kernels (callable, run_numpy)."""
    steps = []
    for region, k in zip(f.partition.regions, f.kernels):
        if k is not None and k.name not in loaded:
            raise KeyError(k.name)
        steps.append(Step(region, k, loaded[k.name] if k is not None else None))
    return Program(f.canonical, f.partition, steps)
