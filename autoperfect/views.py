"""Views: how a value reached through movement ops (reshape, transpose, broadcast) reads the buffer
of the value it views, as a shape and strides. A view is folded into a kernel's loads; a movement
that is no view (a reshape of a transposed value) must be materialized first."""

from __future__ import annotations

from typing import Sequence

from .graph import Graph
from .ops import MOVEMENT, Op


class KernelIRError(ValueError):
    pass


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc if d != 1 else 0)
        acc *= d
    return tuple(reversed(out))


def view_through(graph: Graph, node_id: int, materialized: frozenset = frozenset()
                 ) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
    """(base node, shape, strides) of a value reached through movement ops (stopping at
    `materialized` nodes, which hold buffers of their own); None if a reshape can't be expressed as
    strides over the base buffer."""
    chain = []
    while graph.nodes[node_id].op in MOVEMENT and node_id not in materialized:
        chain.append(graph.nodes[node_id])
        node_id = graph.nodes[node_id].srcs[0]
    shape = graph.nodes[node_id].shape
    strides = contiguous_strides(shape)
    for n in reversed(chain):
        if n.op is Op.TRANSPOSE:
            perm = n.attr("perm")
            shape, strides = tuple(shape[p] for p in perm), tuple(strides[p] for p in perm)
        elif n.op is Op.BROADCAST:
            pad = len(n.shape) - len(shape)
            strides = tuple(0 if i < pad or shape[i - pad] == 1 else strides[i - pad]
                            for i in range(len(n.shape)))
            shape = n.shape
        else:  # reshape: possible as a view when the non-unit dims keep their order and contiguity
            kept = [(d, s) for d, s in zip(shape, strides) if d != 1]
            if [s for _, s in kept] != list(contiguous_strides([d for d, _ in kept])) \
                    and [d for d, _ in kept] != [d for d in n.shape if d != 1]:
                return None
            if [d for d, _ in kept] == [d for d in n.shape if d != 1]:
                it = iter(s for _, s in kept)
                strides = tuple(0 if d == 1 else next(it) for d in n.shape)
            else:
                strides = contiguous_strides(n.shape)
            shape = n.shape
    return node_id, shape, strides


def align(shape, strides, target: tuple[int, ...]) -> tuple[int, ...]:
    """Strides of a value broadcast to `target` (right-aligned, size-1 axes read with stride 0)."""
    pad = len(target) - len(shape)
    out = []
    for i, t in enumerate(target):
        j = i - pad
        if j < 0 or shape[j] == 1:
            out.append(0)
        elif shape[j] == t:
            out.append(strides[j])
        else:
            raise KernelIRError(f"shape {list(shape)} does not broadcast to {list(target)}")
    return tuple(out)


