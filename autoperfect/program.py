"""A compiled op: its regions in order, fused ones run by generated kernels, the rest by MLX.

`Program.__call__` is the user's path (MLX arrays in and out, no copies). `Program.run_guarded` is
the judge's path: numpy buffers, every kernel output pre-filled with a poison pattern and fenced by
canaries, inputs checked for writes, every buffer between guards of address space without
access, so unwritten and out-of-bounds elements are caught.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import threading
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property, lru_cache, partial
from typing import Callable, Sequence

import numpy as np

from . import dtypes
from .fuse import Partition, Region
from .graph import Graph
from .interp import mlx_apply
from .kernel_ir import KernelIR, Launch

CANARY = 64  # elements of fence on each side of every output buffer
# bit patterns no correct kernel writes: NaNs with a payload (computed NaNs are the default 0x7fc00000)
POISON = {"float32": (np.uint32, 0x7FC0DEAD), "float16": (np.uint16, 0x7E5A), "bfloat16": (np.uint16, 0x7FDA),
          "bool": (np.uint8, 0xAB), "int32": (np.uint32, 0x7FC0DEAD)}
FENCE = {"float32": (np.uint32, 0x7FBADBAD), "float16": (np.uint16, 0x7D5B), "bfloat16": (np.uint16, 0x7FDB),
         "bool": (np.uint8, 0xCD), "int32": (np.uint32, 0x7FBADBAD)}


class IntegrityError(Exception):
    """A kernel wrote where it must not, or left outputs unwritten; the message says where."""


@dataclass(frozen=True)
class Step:
    region: Region
    kernel: KernelIR | None       # None: the region is left to MLX
    run: Callable | None          # loaded kernel (backend object with __call__ and run_numpy)


def storage(dtype: str):
    return np.uint16 if dtype == "bfloat16" else dtypes.to_numpy(dtype)


class Program:
    def __init__(self, graph: Graph, partition: Partition, steps: Sequence[Step]):
        self.graph, self.partition, self.steps = graph, partition, tuple(steps)
        self._inputs = tuple(n.id for n in graph.inputs)
        self._calls: tuple | None = None    # the user's path, resolved at its first call (_resolve)
        self._slots: tuple | None = None

    # -- the user's path -------------------------------------------------------------------------------
    def __call__(self, *inputs):
        if self._calls is None:
            self._resolve()
        if len(inputs) != len(self._inputs):
            raise TypeError(f"{self.graph.name} takes {len(self._inputs)} arrays, got {len(inputs)}")
        if self._slots is not None:
            steps, outs = self._slots
            values = list(inputs)
            for call, reads in steps:
                values += call([values[i] for i in reads])
            return values[outs[0]] if len(outs) == 1 else tuple([values[i] for i in outs])
        env = dict(zip(self._inputs, inputs))
        value = self._mlx_value
        for call, reads, writes in self._calls:
            if call is None:
                for i in reads:
                    value(env, i)
            else:
                env.update(zip(writes, call([env[b] if b in env else value(env, b) for b in reads])))
        return self._outputs(env)

    def _resolve(self) -> None:
        """Resolved once (a warm call of a small op is mostly this path): per step what it reads and
        writes, each kernel bound to its launch (`bind`, where the loaded kernel has one: made once,
        then called with its inputs only); a region left to MLX lists its nodes. When every kernel
        reads only the inputs and earlier kernels' outputs, and those are the outputs too, a call
        indexes one list of values (`_slots`) instead of filling the graph's environment."""
        calls = []
        for s in self.steps:
            if s.kernel is None:
                calls.append((None, s.region.nodes, ()))
                continue
            n = len(s.kernel.inputs)
            bind = getattr(s.run, "bind", None)
            call = bind(s.kernel.launch) if bind is not None else partial(s.run, launch=s.kernel.launch)
            calls.append((call, s.kernel.binds[:n], s.kernel.binds[n:]))
        slot = {node: i for i, node in enumerate(self._inputs)}
        steps, count = [], len(self._inputs)
        for call, reads, writes in calls:
            if call is None or any(r not in slot for r in reads):
                break
            steps.append((call, tuple(slot[r] for r in reads)))
            slot.update((w, count + j) for j, w in enumerate(writes))
            count += len(writes)
        else:
            if all(o in slot for o in self.graph.outputs):
                self._slots = (tuple(steps), tuple(slot[o] for o in self.graph.outputs))
        self._calls = tuple(calls)

    def _mlx_value(self, env: dict, i: int):
        """MLX value of node i, computing views and constants on demand."""
        if i not in env:
            n = self.graph.nodes[i]
            env[i] = mlx_apply(n, [self._mlx_value(env, s) for s in n.srcs])
        return env[i]

    def _outputs(self, env: dict):
        outs = [self._mlx_value(env, o) for o in self.graph.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    # -- the judge's path ----------------------------------------------------------------------------
    def run_guarded(self, inputs: Sequence[np.ndarray], outputs: Sequence[int] | None = None,
                    memo: dict | None = None, offset: int | Placement = 0) -> list[np.ndarray]:
        """Outputs as numpy arrays (those at the positions `outputs`, or all); raises IntegrityError
        when a kernel misbehaves. A region MLX computes is evaluated only as far as a kernel or an
        output asked for reads it (MLX is lazy). A kernel's outputs stay the numpy arrays it wrote
        where the host reads them again (as MLX would give back the same bits).

        `memo`, a dict the caller keeps for one set of `inputs` (a judge's draw), holds the values no
        kernel's output reaches (the inputs in MLX and what MLX computes from them alone), on the
        device and on the host, for the next run on the same inputs: a check's second run, and the
        next variant of a kernel on the same draw (a program over the same graph), which would
        compute them again to the same bits. What the memo hands out is read-only; a kernel reads
        copies (`guarded_call`), placed where `offset` says (bytes past a 64-byte boundary, or a
        Placement of each buffer and the run's threads), as its outputs are."""
        import mlx.core as mx

        memo = {} if memo is None else memo
        device, host = memo.setdefault("device", {}), memo.setdefault("host", {})
        if not device:
            device.update({n.id: mx.array(x).astype(dtypes.to_mlx(n.dtype)) for n, x in zip(self.graph.inputs, inputs)})
        env: dict[int, object] = dict(device)
        written: dict[int, np.ndarray] = {}  # the kernels' outputs as they wrote them
        pure = self._pure

        def on_host(i: int) -> np.ndarray:
            if i in written:
                return written[i]
            if i in host:
                return host[i]
            value = _host(self._mlx_value(env, i), self.graph.nodes[i].dtype)
            if i in pure:
                value.setflags(write=False)
                host[i] = value
            return value

        for step in self.steps:
            if step.kernel is None:
                for i in step.region.nodes:
                    self._mlx_value(env, i)
                continue
            k = step.kernel
            outs = guarded_call(step.run, k, [on_host(b) for b in k.binds[:len(k.inputs)]], offset=offset)
            for node, value in zip(k.binds[len(k.inputs):], outs):
                env[node], written[node] = _device(value, self.graph.nodes[node].dtype), value
        wanted = self.graph.outputs if outputs is None else [self.graph.outputs[j] for j in outputs]
        result = [on_host(o) for o in wanted]
        device.update((i, v) for i, v in env.items() if i in pure)
        return result

    @cached_property
    def _pure(self) -> frozenset[int]:
        """The nodes no kernel's output reaches: MLX computes them from the inputs alone."""
        reached = self.graph.downstream(w for s in self.steps if s.kernel is not None
                                        for w in s.kernel.binds[len(s.kernel.inputs):])
        return frozenset(n.id for n in self.graph.nodes if n.id not in reached)


def _host(a, dtype: str) -> np.ndarray:
    import mlx.core as mx

    a = mx.contiguous(a)
    mx.eval(a)
    if dtype == "bfloat16":
        return np.array(a.view(mx.uint16))
    return np.array(a)


def _device(a: np.ndarray, dtype: str):
    import mlx.core as mx

    if dtype == "bfloat16":
        return mx.array(a).view(mx.bfloat16)
    return mx.array(a)


@dataclass(frozen=True)
class Placement:
    """Where a guarded run puts the buffers a kernel sees, and on how many threads it runs: buffer i
    (its inputs, then its outputs) starts offsets[i % len(offsets)] bytes past a 64-byte boundary,
    rounded down to a multiple of its element size (an MLX array, a slice's too, starts at any
    multiple of its element size, and a kernel's inputs and outputs lie independently); `threads`
    sets OpenMP's team for the call (None: as the process has it). With `flush`, every buffer
    instead ends right where the guard's address space without access begins, starting wherever
    that puts it (a multiple of its element size past a 64-byte boundary; a buffer of whole pages
    right after the guard before it): a kernel reading even
    one element past an input's end (a vector load over a row's tail) faults, where an end up to 63
    bytes before the guard let such a read through (and, on a user's buffer that ends a page before
    an unmapped one, it faults: a large malloc'd block of a page's multiple, less its header, does)."""
    offsets: tuple[int, ...] = (0,)
    threads: int | None = None
    flush: bool = False

    def start(self, i: int, itemsize: int) -> int | None:
        """Buffer i's offset past a 64-byte boundary (None: flush with the guard)."""
        return None if self.flush else self.offsets[i % len(self.offsets)] // itemsize * itemsize

    def describe(self) -> str:
        where = ("every buffer ending at the guard" if self.flush else
                 f"buffers {list(self.offsets[:8])} bytes past a 64-byte boundary")
        return where + (f", {self.threads} thread{'s' * (self.threads > 1)}" if self.threads else "")


GUARD = 1 << 20  # bytes of address space no one may touch before and after every guarded region
# The byte every guarded region holds beside its buffer (before its start, and between its end and
# the guard): all ones read as NaN in every float type (and -1 in an integer), so a kernel reading
# an element before an input's start or past its end computes with NaN, where zeros there (a fresh
# mapping's) let a prefix sum reading x[-1] at the first element come out right; and a byte there
# that is not SLACK after a run is a write out of bounds (`written_beside`).
SLACK = 0xFF
# Whether guarded_call puts that guard after its buffers: the judge's children do, where a fault is a
# verdict; a test that runs planted bugs in its own process turns it off, since a fault there ends it.
GUARDED = True


def placed(shape: Sequence[int], dtype, offset: int | None, guard: bool = False) -> np.ndarray:
    """An array whose data starts `offset` bytes past a 64-byte boundary. With `guard`, its data
    (the caller's to fill: a region lent before may hold what it last held, `_Regions`) lies in a
    region of whole pages between two GUARDs of address space mapped without access, SLACK bytes
    beside it, and ends less than 64 bytes before the second (with `offset` None, right at it, and
    the region just large enough: a buffer of whole pages then starts right after the first), so a
    kernel reading or writing far from its buffer faults (a crash is a verdict) rather than
    touching whatever memory lies there, as the fence alone let a store 200 elements past an
    output's end through, and a write nearer is found by `written_beside`; without, it is
    uninitialized (and starts on the boundary where `offset` is None)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    fenced = _guarded(nbytes, offset) if guard else None
    offset = offset or 0
    if fenced is not None:
        return fenced.view(dtype).reshape(shape)
    raw = np.empty(nbytes + 64 + offset, np.uint8)
    start = -raw.ctypes.data % 64 + offset
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def _guarded(nbytes: int, offset: int | None) -> np.ndarray | None:
    page = mmap.PAGESIZE
    if offset is None:  # the end meets the guard after, the start as near the one before as pages let it
        usable = max(-(-nbytes // page), 1) * page
        return _REGIONS.lend(usable, usable - nbytes, nbytes)
    usable = -(-(nbytes + 128) // page) * page
    end = usable - (-nbytes - offset) % 64  # start = end - nbytes lies `offset` past a 64-byte boundary
    return _REGIONS.lend(usable, end - nbytes, nbytes)


def written_beside(a: np.ndarray) -> tuple[str, int] | None:
    """Where a guarded array's region was written outside it: ("before" or "after", how many bytes
    from its data the nearest byte no longer SLACK lies), or None (none was, or `a` is not guarded)."""
    base = a
    while not isinstance(base, mmap.mmap):
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
        if base is None:
            return None
    whole = _usable(base)
    start = a.ctypes.data - whole.ctypes.data
    before, after = whole[:start], whole[start + a.nbytes:]
    if (before != SLACK).any():
        return "before", int(np.argmax(before[::-1] != SLACK)) + 1
    if (after != SLACK).any():
        return "after", int(np.argmax(after != SLACK)) + 1
    return None


def _usable(region: mmap.mmap) -> np.ndarray:
    """A guarded region's bytes between its two GUARDs."""
    return np.frombuffer(region, np.uint8, count=len(region) - 2 * GUARD, offset=GUARD)


class _Regions:
    """Guarded regions (GUARD without access, `usable` bytes, GUARD again) kept for the next buffer of the
    same size, up to POOL_BYTES: a fresh region's first touch page-faults, and on these VMs a 16 MB
    buffer filled took 22 ms in a fresh region and 2 in a kept one
    (docs/experiments/2026-12-07l-cpu/region_faults.py), where the jit's gate runs the kernels of a
    4096x1024 call about 120 times, three buffers of 16 MB each. A region is lent again only once
    the array lent from it is gone (its views keep it alive), and everything beside the new data is
    set to SLACK first, so no run sees what another left there."""
    POOL_BYTES = 1 << 28

    def __init__(self):
        self.kept: list[tuple[int, mmap.mmap, weakref.ref]] = []
        self.lock = threading.Lock()

    def lend(self, usable: int, start: int, nbytes: int) -> np.ndarray | None:
        """`nbytes` at `start` of a region of `usable` bytes (its data the caller's to fill), or None
        where no region can be guarded."""
        region = self._take(usable)
        if region is None:
            return None
        whole = _usable(region)
        whole[:start] = whole[start + nbytes:] = SLACK
        # an array of its own (not a slice of `whole`): the views made of it keep it, and so the region, lent
        data = np.frombuffer(region, np.uint8, count=nbytes, offset=GUARD + start)
        with self.lock:
            self.kept.append((usable, region, weakref.ref(data)))
            while sum(size for size, _, _ in self.kept) > self.POOL_BYTES:
                self.kept.pop(0)  # the oldest: a region still lent stays its array's until it goes
        return data

    def _take(self, usable: int) -> mmap.mmap | None:
        with self.lock:
            for i, (size, region, lent) in enumerate(self.kept):
                if size == usable and lent() is None:
                    del self.kept[i]
                    return region
        libc = _libc()
        if libc is None:
            return None
        region = mmap.mmap(-1, usable + 2 * GUARD)
        base = ctypes.addressof(ctypes.c_char.from_buffer(region))
        shut = [libc.mprotect(ctypes.c_void_p(at), ctypes.c_size_t(GUARD), 0) for at in (base, base + GUARD + usable)]
        return region if shut == [0, 0] else None


_REGIONS = _Regions()


@lru_cache(maxsize=None)
def _libc():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        return libc
    except (OSError, AttributeError):
        return None


@lru_cache(maxsize=None)
def _openmp():
    """OpenMP's runtime as the CPU's kernels load it (libgomp), or None."""
    try:
        omp = ctypes.CDLL(ctypes.util.find_library("gomp") or "libgomp.so.1")
        return omp if hasattr(omp, "omp_set_num_threads") else None
    except OSError:
        return None


@contextmanager
def openmp_threads(threads: int | None):
    """OpenMP's team for the calls this thread makes inside, then as it was."""
    omp = _openmp() if threads else None
    if omp is None:
        yield
        return
    before = omp.omp_get_max_threads()
    omp.omp_set_num_threads(threads)
    try:
        yield
    finally:
        omp.omp_set_num_threads(before)


def guarded_call(kernel, k: KernelIR, inputs: Sequence[np.ndarray], launch: Launch | None = None,
                 offset: int | Placement = 0) -> list[np.ndarray]:
    """Run `kernel` on copies of `inputs` with poisoned, fenced outputs; check what it touched.
    Every buffer the kernel sees starts where `offset` says, bytes past a 64-byte boundary (one
    offset for all, or a Placement: each its own, and the run's threads), between stretches of
    address space no one may touch (`placed`'s guards), and what lies beside it must be as it was
    after the run (`written_beside`)."""
    launch = launch or k.launch
    where = offset if isinstance(offset, Placement) else Placement((offset,))
    ins = []
    for i, x in enumerate(inputs):
        dtype = np.asarray(x).dtype
        ins.append(placed(np.shape(x), dtype, where.start(i, dtype.itemsize), guard=GUARDED))
        np.copyto(ins[-1], x)
    before = [np.ascontiguousarray(x) for x in inputs]  # the caller's arrays, which the kernel never sees
    fenced, views = [], []
    for j, (arg, shape) in enumerate(zip(k.outputs, launch.out_shapes)):
        n = int(np.prod(shape, dtype=np.int64))
        utype, poison = POISON[arg.dtype]
        _, fence = FENCE[arg.dtype]
        # the fence's 64 elements keep the body's alignment
        buf = placed((n + 2 * CANARY,), utype, where.start(len(ins) + j, np.dtype(utype).itemsize),
                     guard=GUARDED)
        buf[:CANARY] = buf[CANARY + n:] = fence
        buf[CANARY:CANARY + n] = poison
        fenced.append(buf)
        views.append(buf[CANARY:CANARY + n].view(storage(arg.dtype)).reshape(shape))
    with openmp_threads(where.threads):
        kernel.run_numpy(ins + views, launch)
    for j, (x, x0) in enumerate(zip(ins, before)):
        if not same_bits(x, x0):
            raise IntegrityError(f"kernel {k.name} wrote into its input {k.inputs[j].name}")
    for arg, shape, buf in zip(k.outputs, launch.out_shapes, fenced):
        utype, poison = POISON[arg.dtype]
        _, fence = FENCE[arg.dtype]
        n = buf.size - 2 * CANARY
        for side, part in (("before", buf[:CANARY]), ("after", buf[CANARY + n:])):
            if np.any(part != fence):
                off = int(np.argmax(part != fence))
                raise IntegrityError(f"kernel {k.name} wrote out of bounds {side} output {arg.name} "
                                     f"(shape {list(shape)}, {CANARY - off if side == 'before' else off + 1} "
                                     "elements away)")
        body = buf[CANARY:CANARY + n]
        if np.any(body == poison):
            flat = int(np.argmax(body == poison))
            idx = np.unravel_index(flat, shape) if shape else ()
            raise IntegrityError(f"kernel {k.name} left output {arg.name} element {list(map(int, idx))} "
                                 f"unwritten (shape {list(shape)}, {int(np.sum(body == poison))} elements)")
    # beside every buffer (beyond an output's fence), its region's SLACK: a write farther faults
    for kind, args, shapes, bufs, fence in (("input", k.inputs, [np.shape(x) for x in ins], ins, 0),
                                           ("output", k.outputs, launch.out_shapes, fenced, CANARY)):
        for arg, shape, buf in zip(args, shapes, bufs):
            where = written_beside(buf)
            if where:
                side, nbytes = where
                raise IntegrityError(f"kernel {k.name} wrote out of bounds {side} {kind} {arg.name} "
                                     f"(shape {list(shape)}, {fence + -(-nbytes // buf.itemsize)} elements away)")
    return views  # views of the fenced buffers, which they keep alive


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two contiguous arrays hold the same bytes (compared eight at a time)."""
    a, b = a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)
    if a.size != b.size:
        return False
    whole = a.size - a.size % 8
    return np.array_equal(a[:whole].view(np.uint64), b[:whole].view(np.uint64)) and np.array_equal(a[whole:], b[whole:])


def describe(program: Program) -> list[dict]:
    """Which region runs where, for logs and reports."""
    return [{"region": s.region.index, "runs": "mlx" if s.kernel is None else s.kernel.name,
             "ops": [program.graph.nodes[i].op.value for i in s.region.nodes]} for s in program.steps]

