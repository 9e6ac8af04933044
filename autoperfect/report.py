"""The report: tables and plots for people, built from the artifacts the other stages wrote.

It never trusts the artifacts to be complete: a missing or malformed file becomes words in its row,
and a kernel that failed validation shows no timing, even when a stale bench.json lies beside it.
Bandwidth is recomputed from `bytes_moved` and the kernel's median, and set against the one ceiling
printed at the top (results/roofline.json), so every figure in the report uses the same yardstick.
The same page is also written as self-contained HTML (plots embedded), which `snakemake --report`
shows inline.
"""

from __future__ import annotations

import base64
import glob
import html
import json
import math
import mimetypes
import os
import re
from collections import Counter
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from matplotlib.figure import Figure

from . import artifacts, bench, roofline

BASELINE_ORDER = ("mlx_eager", "mlx_compile", "mlx_fast", "kernelir_mlx", "numpy", "torch_eager", "torch_compile")
CONDITIONS = {  # condition -> (where bench.json keeps it, the table's title)
    "warm": (None, "Freed memory kept by the allocator"),
    "steady": ("steady", "Steady state: bursts of back-to-back calls over copies of the inputs beyond the "
                         "caches, freed memory kept"),
    "default": ("default_allocator", "Default glibc allocator"),
}
REASON_CHARS = 100
NONE = "–"


@dataclass(frozen=True)
class Timing:
    """One condition's measurements of one kernel, checked to have what the report shows."""
    kernel: dict
    baselines: dict[str, dict]
    speedup: dict[str, dict]
    condition: str
    bytes_moved: int
    bound: dict | None = None     # bench.json's classification: the roofline's time and what binds
    stream_gbps: float | None = None  # the stream kernels timed in the same rounds (older files: none)
    rounds_stream_gbps: float | None = None  # ... the best copy or triad among them: the stream bandwidth then
    bytes_read: int | None = None     # of bytes_moved, those read (older files: not recorded)
    # bootstrap 95% intervals of the kernel's share of each of those two (older files: none)
    rounds_shares_ci95: dict[str, tuple[float, float]] | None = None
    # the roofline's stream bandwidth measured in the same process after its rounds (the warm
    # allocator's child, whose rounds both single calls and the steady state are; older files: none)
    process_stream_gbps: float | None = None
    # of the machine's CPU time over the rounds, the share the host gave other guests (older files: none)
    host_steal: float | None = None
    # the shares of rounds timed again for the host's steal and set aside (contenders.timed_with_streams)
    host_steal_retaken: tuple[float, ...] = ()
    # the one-element MLX op timed in the same rounds, median seconds: the least a call through MLX
    # takes there (older files: none)
    dispatch_floor_s: float | None = None

    @property
    def gbps(self) -> float:
        return self.bytes_moved / self.kernel["median_s"] / 1e9

    @property
    def native_share(self) -> float | None:
        """The least a native call can take in the kernel's rounds, its traffic at its mix's ceiling
        there after the one-element MLX op timed there (MLX's dispatch, which no op through MLX
        escapes), over the kernel's time (None where bench.json has either missing)."""
        if self.stream_gbps is None or self.dispatch_floor_s is None:
            return None
        return roofline.least_seconds(self.bytes_moved, self.stream_gbps, self.dispatch_floor_s) / self.kernel["median_s"]

    def mixed_gbps(self, ceiling: dict) -> float | None:
        """The roofline's ceiling for this op's mix of reads and writes (None where bench.json
        did not record its reads)."""
        if self.bytes_read is None:
            return None
        return roofline.mixed_gbps(self.bytes_read, self.bytes_moved - self.bytes_read, ceiling)


@dataclass(frozen=True)
class Row:
    """One op x backend: its verdict and, per condition, its timing or why there is none."""
    op: str
    backend: str
    verdict: str
    timings: dict[str, Timing | str] = field(default_factory=dict)
    machine: dict | None = None
    variants: dict | None = None  # bench.json's schedule choice per kernel
    in_cache_s: float | None = None  # bench.json's in_cache.seconds: the kernels alone, memory aside
    in_cache_bound: bool = False  # ... with each cut's fixed cost in it (in_cache.fixed_included): at most

    @property
    def label(self) -> str:
        return f"{self.op}/{self.backend}"


# ---------------------------------------------------------------------------------------------
# Reading artifacts


def read_json(path: str) -> tuple[dict | None, str]:
    """The file's object, or None and a few words saying what is wrong with it."""
    name = os.path.basename(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return None, f"{name} missing"
    except (OSError, ValueError) as err:
        return None, f"{name} unreadable ({type(err).__name__})"
    if not isinstance(data, dict):
        return None, f"{name} is not a JSON object"
    return data, ""


def load_row(results_dir: str, op: str, backend: str) -> Row:
    """Validation first: only a passed kernel's bench.json is read at all."""
    where = os.path.join(results_dir, op, backend)
    validation, problem = read_json(os.path.join(where, "validation.json"))
    if validation is None:
        return Row(op, backend, problem)
    if validation.get("passed") is not True:
        label = "UNSUPPORTED" if validation.get("unsupported") is True else "FAILED"  # not rendered, or wrong
        return Row(op, backend, f"{label}: {shorten(str(validation.get('reason', 'no reason given')))}")
    measured, problem = read_json(os.path.join(where, "bench.json"))
    if measured is None:
        return Row(op, backend, f"passed; {problem}")
    machine = measured.get("machine") if isinstance(measured.get("machine"), dict) else None
    variants = measured.get("variants") if isinstance(measured.get("variants"), dict) else None
    in_cache = measured.get("in_cache")
    seconds = in_cache.get("seconds") if isinstance(in_cache, dict) else None
    return Row(op, backend, "passed", {c: _timing(measured, c) for c in CONDITIONS}, machine, variants,
               float(seconds) if _is_number(seconds) and seconds > 0 else None,
               isinstance(in_cache, dict) and in_cache.get("fixed_included") is True)


def load_ceiling(results_dir: str) -> tuple[dict | None, str]:
    """results/roofline.json if it has the figures the report prints, else None and why not."""
    ceiling, problem = read_json(os.path.join(results_dir, "roofline.json"))
    if ceiling is None:
        return None, problem
    for key in ("copy_gbps", "triad_gbps", "fma_gflops", "bandwidth_gbps"):
        if not isinstance(ceiling.get(key), (int, float)) or not ceiling[key] > 0:
            return None, f"roofline.json malformed ({key} is {ceiling.get(key)!r})"
    return ceiling, ""


def _timing(measured: dict, condition: str) -> Timing | str:
    key = CONDITIONS[condition][0]
    section = measured if key is None else measured.get(key)
    if not isinstance(section, dict):
        return f"no {key} in bench.json"
    try:
        return Timing(kernel=_checked(section["kernel"], "median_s", "ci95_s"),
                      baselines={name: _checked(s, "median_s", "ci95_s")
                                 for name, s in section.get("baselines", {}).items()},
                      speedup={name: _checked(s, "median", "ci95")
                               for name, s in section.get("speedup", {}).items()},
                      condition=str(section.get("condition", "condition not recorded")),
                      bytes_moved=int(measured["bytes_moved"]), bound=_bound(measured.get("classification")),
                      stream_gbps=_stream_gbps(section.get("stream_in_rounds")),
                      rounds_stream_gbps=_stream_gbps(section.get("stream_in_rounds"), "gbps"),
                      bytes_read=int(measured["bytes_read"]) if _is_number(measured.get("bytes_read")) else None,
                      rounds_shares_ci95=_shares_ci95(section.get("stream_in_rounds")),
                      process_stream_gbps=_stream_gbps(measured.get("roofline_in_process"), "bandwidth_gbps")
                      if condition in ("warm", "steady") else None,
                      host_steal=_share(section.get("host_steal")),
                      host_steal_retaken=_retaken(section.get("host_steal_retaken")),
                      dispatch_floor_s=_seconds(section.get("dispatch_floor")))
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        return f"bench.json malformed ({type(err).__name__}: {err})"


def _stream_gbps(record: object, key: str = "mixed_gbps") -> float | None:
    """The stream kernels' ceiling for the op's mix of reads and writes in the kernel's own rounds
    (older files: the best stream kernel's GB/s), or with `key` "gbps" the stream bandwidth in
    those rounds, if bench.json has it; any other `key` of a stream record likewise (the in-process
    roofline's "bandwidth_gbps")."""
    if not isinstance(record, dict):
        return None
    gbps = record.get(key, record.get("gbps"))
    return float(gbps) if _is_number(gbps) and gbps > 0 else None


def _share(value: object) -> float | None:
    """A recorded share (0 to 1), or None where it is missing or not one."""
    return float(value) if _is_number(value) and 0 <= value <= 1 else None


def _retaken(value: object) -> tuple[float, ...]:
    """The recorded shares of steal of rounds set aside (a list of shares), those well formed."""
    return tuple(share for share in map(_share, value) if share is not None) if isinstance(value, list) else ()


def _shares_ci95(record: object) -> dict[str, tuple[float, float]] | None:
    """The intervals of the kernel's share of the in-round ceilings (`gbps`, `mixed_gbps`) that
    bench.json records, those well formed."""
    shares = record.get("shares_ci95") if isinstance(record, dict) else None
    if not isinstance(shares, dict):
        return None
    found = {key: (float(ci[0]), float(ci[1])) for key, ci in shares.items()
             if isinstance(ci, list) and len(ci) == 2 and all(_is_number(v) and v > 0 for v in ci) and ci[0] <= ci[1]}
    return found or None


def _seconds(record: object) -> float | None:
    """A summary's median in seconds (bench.summarize), or None where it is missing or not positive."""
    seconds = record.get("median_s") if isinstance(record, dict) else None
    return float(seconds) if _is_number(seconds) and seconds > 0 else None


def _bound(classification: object) -> dict | None:
    """The roofline's verdict if bench.json has one the report can print (older files have none)."""
    if isinstance(classification, dict) and _is_number(classification.get("seconds")) \
            and classification["seconds"] > 0 and isinstance(classification.get("bound"), str):
        return classification
    return None


def _checked(stats: dict, median_key: str, ci_key: str) -> dict:
    """A {median, interval} record whose numbers the report can print; ValueError otherwise."""
    median = stats.get(median_key) if isinstance(stats, dict) else None
    if not _is_number(median) or not median > 0:
        raise ValueError(f"{median_key} is {median!r}")
    ci = stats.get(ci_key)
    if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(map(_is_number, ci))):
        raise ValueError(f"{ci_key} is {ci!r}")
    return stats


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def shorten(text: str, limit: int = REASON_CHARS) -> str:
    """One line, at most `limit` characters: a table cell, not the whole diagnosis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# ---------------------------------------------------------------------------------------------
# Formatting


def _ms(stats: dict) -> str:
    median = f"{stats['median_s'] * 1e3:.3g}"
    ci = stats.get("ci95_s")
    return f"{median} [{ci[0] * 1e3:.3g}, {ci[1] * 1e3:.3g}]" if ci else median


def _ratio(speedup: dict | None) -> str:
    if not speedup:
        return NONE
    ci = speedup.get("ci95")
    median = f"{speedup['median']:.2f}x"
    return f"{median} [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else median


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table_row(cells: list[str]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def baseline_names(rows: list[Row]) -> list[str]:
    """Every baseline some row has: the usual ones in a fixed order, any others after them."""
    seen = {name for row in rows for t in row.timings.values() if isinstance(t, Timing)
            for name in t.baselines}
    return [n for n in BASELINE_ORDER if n in seen] + sorted(seen.difference(BASELINE_ORDER))


def _timing_cells(timing: Timing, baselines: list[str], ceiling: dict | None) -> list[str]:
    cells = [_ms(timing.kernel)]
    for name in baselines:
        stats = timing.baselines.get(name)
        ratio = _ratio(timing.speedup.get(name))
        cells.append(f"{stats['median_s'] * 1e3:.3g} ms, {ratio}" if stats else NONE)
    cells.append(f"{timing.gbps:.1f}")
    if ceiling:
        share = roofline.fraction(timing.bytes_moved, timing.kernel["median_s"], ceiling)
        cells.append(f"{100 * share:.0f}%")
    else:
        cells.append(NONE)
    if timing.bound:
        cells.append(f"{timing.bound['bound']}: {100 * timing.bound['seconds'] / timing.kernel['median_s']:.0f}%")
    else:
        cells.append(NONE)
    cells.append(f"{100 * timing.gbps / timing.stream_gbps:.0f}% of {timing.stream_gbps:.1f}"
                 if timing.stream_gbps else NONE)
    return cells


def _table(rows: list[Row], condition: str, baselines: list[str], ceiling: dict | None) -> list[str]:
    header = ["op", "backend", "verdict", "kernel ms [95% CI]",
              *(f"{name}: median ms, speedup [95% CI]" for name in baselines), "GB/s", "% of stream BW",
              "bound: % of roofline", "% of the stream kernels in the same rounds, for its mix (GB/s)"]
    lines = [_table_row(header), _table_row(["---"] * len(header))]
    for row in rows:
        timing = row.timings.get(condition)
        if isinstance(timing, Timing):
            cells = [row.verdict, *_timing_cells(timing, baselines, ceiling)]
        else:
            verdict = f"{row.verdict}; {timing}" if timing else row.verdict
            cells = [verdict, *[NONE] * (len(header) - 3)]
        lines.append(_table_row([row.op, row.backend, *cells]))
    return lines


def _condition_sentence(rows: list[Row], condition: str) -> str:
    stated = sorted({t.condition for row in rows if isinstance(t := row.timings.get(condition), Timing)})
    if not stated:
        return "No kernel has timings under this condition."
    return "Measured under: " + "; ".join(stated) + "."


def _machine_line(machine: dict | None) -> str:
    if not machine:
        return "Machine: not recorded."
    versions = ", ".join(f"{k} {machine[k]}" for k in ("python", "mlx", "numpy", "torch") if machine.get(k))
    return (f"Machine: {machine.get('cpu')}, {machine.get('cores')} cores, {machine.get('platform')}; "
            f"{versions}.")


def _roofline_line(ceiling: dict | None, problem: str) -> str:
    if not ceiling:
        return f"Roofline: {problem}; fractions of the roofline are not shown."
    return (f"Roofline (measured {ceiling.get('measured_at')}, {ceiling.get('threads')} threads, "
            f"{ceiling.get('compiler')}): stream copy {ceiling['copy_gbps']:.1f} GB/s, "
            f"triad {ceiling['triad_gbps']:.1f} GB/s{_streaming(ceiling)}{_reading(ceiling)}"
            f"{_stream_arrays(ceiling)}, FMA {ceiling['fma_gflops']:.0f} GFLOP/s{_function_rates(ceiling)}.")


def _stream_arrays(ceiling: dict) -> str:
    """The stream arrays' sizes and whether they were beyond the caches (roofline.stream_sizes)."""
    sizes = ceiling.get("sizes")
    if not (isinstance(sizes, list) and sizes and all(_is_number(n) for n in sizes)):
        return ""
    arrays = " and ".join(f"{4 * n / 1e6:.0f} MB" for n in sizes) + _stream_pages(ceiling)
    caches = ceiling.get("caches_bytes")
    if not _is_number(caches):
        return f" over arrays of {arrays}"
    where = "beyond" if ceiling.get("beyond_caches") else "not beyond (memory was short)"
    return f" over arrays of {arrays}, {where} the machine's {caches / 1e6:.0f} MB of caches"


PAGE_NAMES = {"huge": "huge pages", "base": "4 KB pages"}


def _stream_pages(ceiling: dict) -> str:
    """The kinds of page the stream arrays were measured on (roofline.page_kinds) and the one the
    stream bandwidth was reached on, where there were two."""
    by_size = ceiling.get("by_size") if isinstance(ceiling.get("by_size"), list) else []
    kinds = sorted({s.get("pages") for s in by_size if isinstance(s, dict)} & PAGE_NAMES.keys())
    if len(kinds) < 2 or ceiling.get("pages") not in PAGE_NAMES:
        return ""
    return f" on {' and on '.join(PAGE_NAMES[k] for k in kinds)} (the best on {PAGE_NAMES[ceiling['pages']]})"


def _streaming(ceiling: dict) -> str:
    if not all(_is_number(ceiling.get(k)) for k in ("copy_nt_gbps", "triad_nt_gbps")):
        return ""
    typical = (f"; at the median of their samples {ceiling['median_bandwidth_gbps']:.1f}"
               if _is_number(ceiling.get("median_bandwidth_gbps")) else "")
    return (f" (with streaming stores: copy {ceiling['copy_nt_gbps']:.1f}, triad {ceiling['triad_nt_gbps']:.1f}; "
            f"the stream bandwidth is the best, {ceiling['bandwidth_gbps']:.1f} GB/s{typical})")


def _reading(ceiling: dict) -> str:
    if not _is_number(ceiling.get("read_gbps")):
        return ""
    return (f", read-only {ceiling['read_gbps']:.1f} GB/s ({ceiling['read_gbps'] / ceiling['bandwidth_gbps']:.2f}x "
            "the stream bandwidth: an op that mostly reads is held to it)")


def _function_rates(ceiling: dict) -> str:
    rates = ceiling.get("functions", {}).get("rates", {}) if isinstance(ceiling.get("functions"), dict) else {}
    shown = [f"{name} {r['per_second'] / 1e9:.2g}" for name, r in sorted(rates.items())
             if isinstance(r, dict) and _is_number(r.get("per_second"))]
    return f"; functions (G evaluations/s, best schedule): {', '.join(shown)}" if shown else ""


def render(rows: list[Row], ceiling: dict | None, ceiling_problem: str, plot_links: dict[str, str]) -> str:
    """The whole markdown page."""
    baselines = baseline_names(rows)
    lines = ["# Auto-Perfect report", "",
             _machine_line(ceiling.get("machine") if ceiling else _first_machine(rows)), "",
             _roofline_line(ceiling, ceiling_problem), "",
             "Times are medians over interleaved rounds after warm-up, including allocation and dispatch; "
             "a speedup is a baseline's median over the kernel's, with a paired bootstrap 95% interval. "
             "`kernelir_mlx` is the same kernels' KernelIR rendered as MLX ops under mx.compile (the "
             "`mlx` backend): the same fusion in MLX's code, so the kernel's speedup over it is what the "
             "generated code adds to the fusion. "
             "GB/s is the op's ideal traffic (`bytes_moved`) over the kernel's median. "
             "The roofline's time is the longer of that traffic at the bandwidth its mix of reads and "
             "writes can reach (each byte read at the read-only kernel's cost, each byte written at "
             "what the best copy adds to its reads: a reduction is held to the read-only figure, a "
             "copy-like op to the copy's) and the op's work at the measured ceilings (each "
             "approximated function at its own rate); the `bound` column names what binds and the "
             "roofline's time as a share of the kernel's, and the last column the kernel's share of "
             "the same mix's ceiling from the stream kernels timed in its own rounds. "
             "A kernel that failed validation has no timings.", ""]
    lines += goals_section(rows, ceiling)
    for condition, (_, title) in CONDITIONS.items():
        lines += [f"## {title}", "", _condition_sentence(rows, condition), "",
                  *_table(rows, condition, baselines, ceiling), ""]
    lines += ["## Plots", ""]
    lines += [f"![{name}]({link})" for name, link in plot_links.items()]
    return "\n".join(lines) + "\n"


GOAL_MEMORY_BYTES = 16 << 20   # memory-bound ops this large or larger ...
GOAL_STREAM_SHARE = 0.80       # ... reach this share of the stream bandwidth
GOAL_OVER_TORCH_COMPILE = 1.2  # geometric mean of the speedups over torch.compile
MUST_BEAT = ("mlx_eager", "mlx_compile")
MEMORY_NEAR = 0.8              # memory time at this share of the roofline's time or more: held to the bar too


def held_to_memory(bound: dict | None) -> bool:
    """Whether the stream goal holds an op: memory binds it, or its traffic's time is within
    1 - MEMORY_NEAR of the work that binds, so that the verdict does not flip with the noise in two
    near-equal ceilings: softmax's exps and GELU's tanhs take about as long as their traffic, and
    the functions' measured rates move by up to 1.3x from run to run (tanh 5.2 and 6.8 G/s in two
    runs an hour apart on 2026-12-05)."""
    if bound is None:
        return False
    memory_s = bound.get("memory_s")
    return bound["bound"] == "memory" or (_is_number(memory_s) and memory_s >= MEMORY_NEAR * bound["seconds"])


def _bound_cell(bound: dict | None) -> str:
    """What binds, and where the traffic is held to the bar though work binds, how near it is."""
    if bound is None:
        return NONE
    if bound["bound"] != "memory" and held_to_memory(bound):
        return f"{bound['bound']}, memory at {100 * bound['memory_s'] / bound['seconds']:.0f}% of it"
    return bound["bound"]


def goals_section(rows: list[Row], ceiling: dict | None) -> list[str]:
    """The CPU performance goals, checked against the warm-allocator figures: memory-bound ops of
    GOAL_MEMORY_BYTES or more at GOAL_STREAM_SHARE of the stream bandwidth (shown beside their share
    of their own mix's ceiling, from the roofline and from the stream kernels timed in the op's own
    rounds, with the bootstrap interval of that share over the rounds resampled whole, and from
    the least a native call can take there, MLX's dispatch included; in single calls and in the
    steady state; the bar as a share of each op's own mix's ceiling), every op
    ahead of MUST_BEAT, none behind
    torch.compile, and the geometric mean over torch.compile. Each verdict is the figures', none is
    asserted."""
    timed = [(row, t) for row in rows if row.backend == "cpu" and isinstance(t := row.timings.get("warm"), Timing)]
    lines = ["## The CPU goals, under the warm allocator", ""]
    if not timed or not ceiling:
        return lines + ["No CPU kernel with warm-allocator timings" + ("" if ceiling else " and no roofline")
                        + ": nothing to check.", ""]
    header = ["op/backend", "MB moved", "bound", "% of stream BW", "% of its mix's ceiling",
              "% of its mix's ceiling in its rounds [95% interval]", "steady: % of stream BW",
              "steady: % of its mix's ceiling in its bursts [95% interval]", "in cache: ms, x its traffic at the stream BW",
              *(f"over {name}" for name in (*MUST_BEAT, "torch_compile"))]
    lines += [_table_row(header), _table_row(["---"] * len(header))]
    short = {"warm": [], "steady": []}
    short_then = {"warm": [], "steady": []}  # the same bar against the stream bandwidth of the op's own rounds
    short_mix = {"warm": [], "steady": []}   # ... and against its own mix's ceiling in those rounds
    short_own = {"warm": [], "steady": []}   # ... and against the roofline measured in its own process
    short_native = {"warm": [], "steady": []}  # ... and against the least a native call takes in its rounds
    behind, over_torch, held, bar_of_mix = [], [], [], []
    undecided = []  # in cache past the bar, but only as a bound (one cut: each call's fixed cost in it)
    reach = []  # (op, its dispatch floor, the least a single call can take, the bar's time), in seconds
    streams_then = [t.rounds_stream_gbps for _, t in timed if t.rounds_stream_gbps]  # single calls' rounds
    qualify = False  # whether any op is held to the memory bar
    for row, t in timed:
        mix = t.mixed_gbps(ceiling)
        mixed = NONE if mix is None else f"{100 * t.gbps / mix:.0f}%"
        # held to the stream bar (every condition's bytes_moved is the op's, read once from bench.json)
        goal_op = held_to_memory(t.bound) and t.bytes_moved >= GOAL_MEMORY_BYTES
        qualify = qualify or goal_op
        at_goal = t.bytes_moved / (GOAL_STREAM_SHARE * ceiling["bandwidth_gbps"] * 1e9)  # its traffic at the bar
        if goal_op and mix is not None:
            bar_of_mix.append(f"{row.op} {_percent(GOAL_STREAM_SHARE * ceiling['bandwidth_gbps'] / mix, below=1.0)}")
            if t.dispatch_floor_s is not None:
                reach.append((row.op, t.dispatch_floor_s, roofline.least_seconds(t.bytes_moved, mix, t.dispatch_floor_s),
                              at_goal))
        cells = {}
        for state in short:
            s = row.timings.get(state)
            if not isinstance(s, Timing):
                cells[state] = (NONE, NONE)
                continue
            stream = roofline.fraction(s.bytes_moved, s.kernel["median_s"], ceiling)
            own = s.gbps / s.process_stream_gbps if s.process_stream_gbps else None
            then = s.gbps / s.rounds_stream_gbps if s.rounds_stream_gbps else None
            mix_then = s.gbps / s.stream_gbps if s.stream_gbps else None
            ci = s.rounds_shares_ci95 or {}
            if goal_op:
                for missed, share, interval in ((short, stream, None), (short_own, own, None),
                                                (short_then, then, ci.get("gbps")),
                                                (short_mix, mix_then, ci.get("mixed_gbps")),
                                                (short_native, s.native_share, ci.get("native"))):
                    if share is None or share < GOAL_STREAM_SHARE:  # none recorded: no verdict of met
                        missed[state].append(f"{row.op} ({_percent(share, interval, GOAL_STREAM_SHARE)})")
            cells[state] = (_percent(stream), _percent(mix_then, ci.get("mixed_gbps")))
        for name in MUST_BEAT + ("torch_compile",):
            s = t.speedup.get(name)
            if s and s["median"] < 1:
                behind.append(f"{row.op} behind {name} ({s['median']:.2f}x)")
        if t.speedup.get("torch_compile"):
            over_torch.append(t.speedup["torch_compile"]["median"])
        in_cache = NONE
        if row.in_cache_s is not None:
            if goal_op and row.in_cache_s > at_goal:  # a bound says nothing of the kernel past it
                (undecided if row.in_cache_bound else held).append(
                    f"{row.op} ({'at most ' * row.in_cache_bound}{1e3 * row.in_cache_s:.3g} ms against "
                    f"{1e3 * at_goal:.3g} ms)")
            in_cache = (f"{'≤' * row.in_cache_bound}{1e3 * row.in_cache_s:.3g}, "
                        f"{row.in_cache_s * ceiling['bandwidth_gbps'] * 1e9 / t.bytes_moved:.2f}x")
        lines.append(_table_row([row.label, f"{t.bytes_moved / 1e6:.0f}", _bound_cell(t.bound),
                                 cells["warm"][0], mixed, cells["warm"][1], *cells["steady"], in_cache,
                                 *(_ratio(t.speedup.get(n)) for n in (*MUST_BEAT, "torch_compile"))]))
    geomean = _geomean(over_torch) if over_torch else None
    goal = f"- memory-bound ops of {GOAL_MEMORY_BYTES >> 20} MB or more at {100 * GOAL_STREAM_SHARE:.0f}% of the stream bandwidth"
    steady_timed = any(isinstance(row.timings.get("steady"), Timing) for row, _ in timed)
    lines += [""]
    memory = [f"{goal}, single calls: {_short_of(short['warm'])}",
              *(["  - the bar as a share of what each op's traffic can reach at most (the roofline's ceiling for "
                 "its mix of reads and writes: an op that only reads, the read kernel's): " + ", ".join(bar_of_mix)]
                if bar_of_mix else []),
              *_reach_line(reach),
              f"{goal}, steady state: " + (_short_of(short["steady"]) if steady_timed else NONE + " (not measured)"),
              *_own_process_line(goal, short_own, [t.process_stream_gbps for _, t in timed], ceiling["bandwidth_gbps"],
                                 steady_timed),
              f"{goal} measured in the op's own rounds (the stream kernels timed beside it: the roofline's "
              f"{ceiling['bandwidth_gbps']:.1f} GB/s is another moment's), single calls: "
              + _short_of(short_then["warm"])
              + (f"; steady state: {_short_of(short_then['steady'])}" if steady_timed else ""),
              *_streams_then_line(streams_then, ceiling["bandwidth_gbps"]),
              *_steal_line([(row.op, t.host_steal, t.host_steal_retaken) for row, t in timed],
                           _share(ceiling.get("host_steal")), _retaken(ceiling.get("host_steal_retaken"))),
              "  - against the ceiling for its own mix of reads and writes in those rounds (an op that only reads "
              "held to the read kernel), single calls: " + _short_of(short_mix["warm"])
              + (f"; steady state: {_short_of(short_mix['steady'])}" if steady_timed else ""),
              "  - against the least a native call can take in those rounds (its traffic at that ceiling after "
              "the one-element MLX op timed beside it: the dispatch no op through MLX escapes), single calls: "
              + _short_of(short_native["warm"])
              + (f"; steady state: {_short_of(short_native['steady'])}" if steady_timed else ""),
              f"  - held in cache (the kernel alone, its data in the L2s, takes longer than the op's traffic at "
              f"{100 * GOAL_STREAM_SHARE:.0f}% of the stream bandwidth: its arithmetic and its traffic between "
              "L1 and L2, which no way of meeting memory removes, would miss the bar): "
              + (", ".join(held) if held else "none"
                 + ("" if any(r.in_cache_s for r, _ in timed) else " measured"))
              + ("; not decided (one cut timed, each call's fixed cost in its figure, which is so at most): "
                 + ", ".join(undecided) if undecided else "")]
    # with no op the bar applies to, "all" would read as met: say so instead
    lines += memory if qualify else [f"{goal}: no op qualifies (none is memory-bound and moves "
                                     f"{GOAL_MEMORY_BYTES >> 20} MB or more)"]
    lines += ["- ahead of " + " and ".join(MUST_BEAT) + " and never behind torch_compile (medians, single calls): "
              + _short_of(behind, "; "),
              f"- geometric mean over torch_compile: " + (NONE + " (torch not installed)" if geomean is None else
              f"{geomean:.2f}x over {len(over_torch)} ops (goal {GOAL_OVER_TORCH_COMPILE}x): "
              + ("met" if geomean >= GOAL_OVER_TORCH_COMPILE else "not met"))
              + _steady_geomean([row.timings.get("steady") for row, _ in timed]), ""]
    return lines


def _reach_line(reach: list[tuple[str, float, float, float]]) -> list[str]:
    """Which ops' single calls the bar is beyond: the least such a call can take, its traffic at its
    mix's ceiling from the roofline after MLX's dispatch (the one-element op timed in its rounds),
    against the time its traffic takes at the bar. Each entry is (op, floor, least, bar) in seconds;
    none where no bench.json recorded a floor."""
    if not reach:
        return []
    beyond = [f"{op} ({1e3 * least:.3g} ms at the least against {1e3 * bar:.3g} ms)"
              for op, _, least, bar in reach if least > bar]
    within = [op for op, _, least, bar in reach if least <= bar]
    floors = [1e3 * floor for _, floor, _, _ in reach]
    span = _span(min(floors), max(floors), ".3g")
    return ["  - the bar within a single call's reach (the least a call can take: its traffic at that ceiling, after "
            f"MLX's dispatch of a one-element op timed in its rounds, {span} ms): beyond it: "
            + (", ".join(beyond) if beyond else "none") + "; within it: " + (", ".join(within) if within else "none")]


def _own_process_line(goal: str, missed: dict[str, list[str]], gbps: list[float | None], roofline_gbps: float,
                      steady_timed: bool) -> list[str]:
    """The bar against the roofline's stream kernels run again in each op's own benchmark process,
    after its rounds (none where no bench.json recorded them): the same ceiling, measured where and
    when the op's buffers were, since on a shared VM the bandwidth moves between processes."""
    found = [g for g in gbps if g]
    if not found:
        return []
    return [f"{goal} measured in the op's own process (the roofline's stream kernels and sizes, run again "
            f"after its rounds: {_gbps_span(found)}, against {roofline_gbps:.1f} GB/s in the roofline's own), single calls: "
            + _short_of(missed["warm"]) + (f"; steady state: {_short_of(missed['steady'])}" if steady_timed else "")]


def _streams_then_line(gbps: list[float], roofline_gbps: float) -> list[str]:
    """How fast the stream kernels themselves ran in the ops' single-call rounds, against the
    roofline's best: what that condition leaves even the copy (none where no rounds were recorded)."""
    if not gbps:
        return []
    return [f"  - the stream kernels themselves in those rounds, single calls: {_gbps_span(gbps, roofline_gbps)} "
            f"of the roofline's {roofline_gbps:.1f} GB/s (the best copy or triad beside each op)"]


def _steal_line(stolen: list[tuple[str, float | None, tuple[float, ...]]], roofline_steal: float | None,
                roofline_retaken: tuple[float, ...] = ()) -> list[str]:
    """The share of the CPU time the host gave other guests (steal) while each op's single calls
    were timed, and while the roofline's streams ran, each with the shares of the rounds timed again
    for it and set aside (_stolen): where it is high, the VM's neighbours took that op's moment (none
    where nothing recorded it)."""
    found = [f"{op} {_stolen(share, retaken)}" for op, share, retaken in stolen if share is not None]
    if not found and roofline_steal is None:
        return []
    line = "  - CPU time the host gave other guests (steal) while each op's single calls were timed: "
    line += ", ".join(found) if found else NONE
    if roofline_steal is not None:
        line += f"; while the roofline's streams ran: {_stolen(roofline_steal, roofline_retaken)}"
    return [line]


def _stolen(share: float, retaken: tuple[float, ...]) -> str:
    """A steal share as a percentage, and those of the rounds timed again for it and set aside."""
    aside = f" (rounds at {', '.join(f'{100 * r:.1f}%' for r in retaken)} timed again and set aside)" if retaken else ""
    return f"{100 * share:.1f}%{aside}"


def _gbps_span(gbps: list[float], of_gbps: float | None = None) -> str:
    """The range of some GB/s figures ("40.0 GB/s", "30.0-40.0 GB/s"), with `of_gbps` their shares
    of it too ("30.0-40.0 GB/s, 60-80%"); one figure where the range rounds to one."""
    lo, hi = min(gbps), max(gbps)
    one = f"{lo:.1f}" == f"{hi:.1f}"
    span = f"{_span(lo, hi, '.1f')} GB/s"
    if of_gbps:
        span += f", {100 * lo / of_gbps:.0f}%" if one else f", {100 * lo / of_gbps:.0f}-{100 * hi / of_gbps:.0f}%"
    return span


def _span(lo: float, hi: float, spec: str) -> str:
    """"lo-hi" in the format `spec`, or one figure where the two print alike."""
    low, high = format(lo, spec), format(hi, spec)
    return low if low == high else f"{low}-{high}"


def _percent(share: float | None, interval: tuple[float, float] | None = None, below: float | None = None) -> str:
    """A share as a percentage, with its 95% interval where one was measured; a share `below` a bar
    that whole percents would round up to it gets a decimal (79.7%, not 80%, for a miss of 80%)."""
    if share is None:
        return NONE
    close = below is not None and share < below and round(100 * share) >= 100 * below
    return f"{100 * share:.{1 if close else 0}f}%" + (
        "" if interval is None else f" [{100 * interval[0]:.0f}, {100 * interval[1]:.0f}]")


def _short_of(missed: list[str], sep: str = ", ") -> str:
    """A goal's verdict over the ops: "all", or "not " and those that missed it."""
    return "all" if not missed else "not " + sep.join(missed)


def _geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def _steady_geomean(timings: list) -> str:
    """The steady state's geometric mean over torch.compile, where every op has one."""
    ratios = [t.speedup["torch_compile"]["median"] for t in timings
              if isinstance(t, Timing) and t.speedup.get("torch_compile")]
    if not ratios or len(ratios) < len(timings):
        return ""
    return f"; in the steady state {_geomean(ratios):.2f}x"


def _first_machine(rows: list[Row]) -> dict | None:
    """Without a roofline, the machine is taken from the first bench.json that records one."""
    return next((row.machine for row in rows if row.machine), None)


def runtime_section(results_dir: str) -> list[str]:
    """autoperfect.jit's figures, when measured: cold and warm costs (runtime.json) and the model
    end to end (model_e2e.json). Both are optional targets, so a missing file is one sentence."""
    lines = ["## autoperfect.jit: cold and warm calls", ""]
    runtime, problem = read_json(os.path.join(results_dir, "runtime.json"))
    if runtime is None:
        lines += [f"Not measured ({problem}; `python -m autoperfect.bench_runtime` writes it).", ""]
    else:
        machine = runtime.get("machine") or {}  # none where every op failed
        where = (f", dispatch {runtime['dispatch']['dispatch']}, load average {machine['load_1m']:.1f} on "
                 f"{machine['cores']} cores (a shared machine: expect noise)" if machine else "")
        lines += [f"Measured {runtime.get('measured_at')}, {runtime.get('condition', 'no op measured')}{where}. "
                  "First call: trace, "
                  "compile, gate (ms); race: the first call's kernels against the function's own MLX ops "
                  "(µs a call; where MLX wins, the signature runs as MLX and the warm call is MLX's); "
                  "runtime overhead: the warm call against the same kernels run without the runtime.", "",
                  "| op | size | first call (trace/compile/gate) | first call, kernel on disk | race: kernels / MLX "
                  "| warm call (ms) | kernels alone (ms) | overhead | vs MLX eager | vs mx.compile "
                  "| from the pipeline's cache |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for op, why in runtime.get("failed", {}).items():
            lines.append(_table_row([op, NONE, f"not measured: {shorten(why.splitlines()[0], 120)}"] + [NONE] * 8))
        for op, sizes in runtime["ops"].items():
            for size, r in sizes.items():
                setup = r["cold"]["setup_s"]
                parts = "/".join(f"{setup.get(k, 0) * 1e3:.0f}" for k in ("trace", "compile", "gate"))
                handoff = r.get("pipeline_cache")
                hits = NONE if handoff is None else ", ".join(f"{k['kernel']} from {k['cache']}"
                                                              for k in handoff["kernels"]) or "miss"
                overhead = (f"{r['overhead_s'] * 1e6:+.0f} µs ({_ratio(r['jit_over_program'])})"
                            if "overhead_s" in r else shorten("; ".join(r["cold"]["misses"]), 60))
                race = r["cold"].get("race") or {}
                if race.get("mlx_runs"):
                    overhead = "– (MLX runs)"
                raced = NONE if not race else (f"{race['kernels_s'] * 1e6:.1f} / {race['mlx_s'] * 1e6:.1f}"
                                               + (": MLX runs" if race.get("mlx_runs") else ""))
                lines.append(_table_row([op, size, f"{r['cold']['seconds'] * 1e3:.0f} ({parts})",
                                         f"{r['disk']['seconds'] * 1e3:.1f}", raced, _ms(r["warm"]["jit"]),
                                         _ms(r["warm"]["program"]) if "program" in r["warm"] else NONE,
                                         overhead,
                                         _ratio(r["speedup"].get("mlx_eager")),
                                         _ratio(r["speedup"].get("mlx_compile")), hits]))
        lines.append("")
    lines += ["## A Qwen2-architecture model, end to end", ""]
    model, problem = read_json(os.path.join(results_dir, "model_e2e.json"))
    if model is None:
        return lines + [f"Not measured ({problem}; `python -m autoperfect.model_e2e` writes it).", ""]
    s, jit_check = model["settings"], model["checks"]["jit"]
    lines += [f"Random weights; hidden {s['hidden_size']}, {s['layers']} layers, batch {s['batch']}, prompt "
              f"{s['prompt']}, {s['tokens']} tokens decoded greedily; measured {model.get('measured_at')}, "
              f"{model.get('condition')}, load average {model['machine']['load_1m']:.1f}. `written`: norms, "
              "gated activation and attention softmax written in MLX ops; `jit`: the same functions in "
              f"autoperfect.jit; `stock`: mlx-lm's fused ops. Tokens/s: the {model['generated_tokens']} "
              "generated tokens over the whole generation, prefill included.", "",
              "Greedy tokens of jit and written identical: "
              f"**{'yes' if jit_check['identical_tokens'] else 'NO'}**; "
              f"logits within 1e-3 of their scale: **{'yes' if jit_check['logits_agree'] else 'NO'}** "
              f"(max difference {jit_check['max_abs_logit_diff']:.3g}). jit's first pass took "
              f"{model['jit_first_pass_s']:.1f} s.", "",
              "| variant | prefill + decode (s) | tokens/s [95% CI] | jit's speedup over it |",
              "| --- | --- | --- | --- |"]
    for name, t in model["timing"].items():
        lo, hi = t["tokens_per_s_ci95"]
        took = f"{t['median_s']:.2f} [{t['ci95_s'][0]:.2f}, {t['ci95_s'][1]:.2f}]"
        lines.append(_table_row([name, took, f"{t['tokens_per_s']:.1f} [{lo:.1f}, {hi:.1f}]",
                                 _ratio(model["speedup"].get(name))]))
    lines += ["", "What ran where: " + "; ".join(
        f"{fn}: {st['kernel_calls']} kernel calls, {st['eager_calls']} eager"
        + (f" ({shorten(next(iter(st['plans'].values()))[0], 140)})" if st["eager_calls"] else "")
        for fn, st in model["runtime"].items()) + ".", ""]
    return lines


# ---------------------------------------------------------------------------------------------
# Plots


def _save(figure: Figure, path: str) -> None:
    with bench.atomic_output(path) as temporary:
        figure.savefig(temporary, format="png", dpi=120, bbox_inches="tight")


def _empty_note(axes, rows_shown: int) -> None:
    if rows_shown == 0:
        axes.text(0.5, 0.5, "no passing kernel with timings", ha="center", va="center",
                  transform=axes.transAxes)


def _speedup_points(timings: list[Timing], baseline: str) -> tuple[list[int], list[float], list]:
    """Positions, medians and (below, above) error lengths of the kernels timed against `baseline`."""
    xs, ys, errors = [], [], [[], []]
    for i, timing in enumerate(timings):
        s = timing.speedup.get(baseline)
        if not s:
            continue
        lo, hi = s.get("ci95", [s["median"], s["median"]])
        xs.append(i)
        ys.append(s["median"])
        errors[0].append(s["median"] - lo)
        errors[1].append(hi - s["median"])
    return xs, ys, errors


def speedup_plot(rows: list[Row], path: str) -> None:
    """Speedup over each baseline, per kernel, on a log axis (2x and 0.5x look equally far from 1)."""
    timed = [(row.label, t) for row in rows if isinstance(t := row.timings.get("warm"), Timing)]
    baselines = baseline_names(rows)
    figure = Figure(figsize=(max(6.0, 1.2 * len(timed) + 3), 4.5))
    axes = figure.add_subplot()
    width = 0.8 / max(1, len(baselines))
    for b, name in enumerate(baselines):
        xs, ys, errors = _speedup_points([t for _, t in timed], name)
        axes.errorbar([x - 0.4 + width * (b + 0.5) for x in xs], ys, yerr=errors, fmt="o", capsize=3,
                      label=name)
    axes.axhline(1.0, color="gray", linewidth=1)
    axes.set_yscale("log")
    axes.set_xticks(range(len(timed)), [label for label, _ in timed], rotation=30, ha="right")
    axes.set_ylabel("speedup (baseline median / kernel median)")
    axes.set_title("Speedup with 95% CI, freed memory kept")
    _empty_note(axes, len(timed))
    if baselines and timed:
        axes.legend(fontsize="small")
    _save(figure, path)


def bandwidth_plot(rows: list[Row], ceiling: dict | None, path: str) -> None:
    """Achieved GB/s per kernel in each condition (CONDITIONS), against the measured stream line
    (best and median moment), the read-only kernel's line and, across each kernel's bars, the
    ceiling for its own mix of reads and writes (roofline.mixed_gbps); above each bar a tick at the
    same mix's ceiling from the stream kernels timed in that bar's own rounds."""
    labels = [row.label for row in rows if any(isinstance(t, Timing) for t in row.timings.values())]
    figure = Figure(figsize=(max(6.0, 1.0 * len(labels) + 3), 4.5))
    axes = figure.add_subplot()
    width = 0.8 / len(CONDITIONS)
    for c, condition in enumerate(CONDITIONS):
        timings = [row.timings.get(condition) for row in rows if row.label in labels]
        where = [i - 0.4 + width * (c + 0.5) for i in range(len(labels))]
        axes.bar(where, [t.gbps if isinstance(t, Timing) else math.nan for t in timings], width=width,
                 label=CONDITIONS[condition][1].split(":")[0].lower())
        # the same mix's ceiling from the stream kernels timed in the bar's own rounds
        axes.scatter(where, [t.stream_gbps if isinstance(t, Timing) and t.stream_gbps else math.nan
                             for t in timings], marker="_", s=120, color="black", zorder=3,
                     label="its mix's ceiling from the stream kernels in the same rounds" if c == 0 else None)
    if ceiling:
        axes.axhline(ceiling["bandwidth_gbps"], color="red", linestyle="--",
                     label=f"stream bandwidth {ceiling['bandwidth_gbps']:.1f} GB/s")
        if _is_number(ceiling.get("median_bandwidth_gbps")):
            axes.axhline(ceiling["median_bandwidth_gbps"], color="grey", linestyle="-.",
                         label=f"stream bandwidth at the median moment {ceiling['median_bandwidth_gbps']:.1f} GB/s")
        if _is_number(ceiling.get("read_gbps")):
            axes.axhline(ceiling["read_gbps"], color="red", linestyle=":",
                         label=f"read-only {ceiling['read_gbps']:.1f} GB/s")
        mixes = [(i, t.mixed_gbps(ceiling))
                 for i, t in enumerate(row.timings.get("warm") for row in rows if row.label in labels)
                 if isinstance(t, Timing) and t.bytes_read is not None]
        for n, (i, gbps) in enumerate(mixes):  # each op's own ceiling, across its pair of bars
            axes.hlines(gbps, i - 0.45, i + 0.45, color="black", linewidth=2,
                        label="the op's mix of reads and writes: its ceiling" if n == 0 else None)
    axes.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    axes.set_ylabel("achieved GB/s (bytes_moved / median)")
    axes.set_title("Achieved bandwidth against the measured roofline")
    _empty_note(axes, len(labels))
    if labels or ceiling:  # below the axes: the ceilings' lines run across the whole plot
        axes.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2)
    _save(figure, path)


SIZE_CONTENDERS = ("kernel", "mlx_eager", "mlx_compile", "torch_compile")  # bench.json's, in this order
SIZE_STYLES = {"kernel": "-", "mlx_eager": "--", "mlx_compile": ":", "torch_compile": "-."}


def size_series(measured: dict) -> dict[str, list[tuple[int, dict]]]:
    """contender -> [(bytes moved, warm timing)] sorted by size, from one bench.json: its `scaling`
    sizes and the spec's own; a size whose record lacks what the plot needs is left out."""
    records = [r for r in measured.get("scaling") or [] if isinstance(r, dict) and "skipped" not in r]
    records.append({"bytes_moved": measured.get("bytes_moved"), "kernel": measured.get("kernel"),
                    **(measured.get("baselines") if isinstance(measured.get("baselines"), dict) else {})})
    series: dict[str, list[tuple[int, dict]]] = {}
    for record in records:
        size = record.get("bytes_moved")
        if not _is_number(size) or size <= 0:
            continue
        for name in SIZE_CONTENDERS:
            try:
                series.setdefault(name, []).append((int(size), _checked(record.get(name), "median_s", "ci95_s")))
            except ValueError:
                continue
    return {name: sorted(points, key=lambda p: p[0]) for name, points in series.items() if points}


def sizes_plot(results_dir: str, ops: list[str], backends: list[str], ceiling: dict | None, path: str) -> None:
    """Time against size per op (the kernel and MLX eager, mx.compile, torch.compile at the spec's
    size and smaller ones: bench.json), log-log with 95% interval bars, and the time the measured
    stream bandwidth needs to move those bytes."""
    panels = []
    for op in ops:
        for backend in backends:
            measured, _ = read_json(os.path.join(results_dir, op, backend, "bench.json"))
            series = size_series(measured) if measured is not None else {}
            if series:
                panels.append((f"{op}/{backend}", series))
    cols = min(3, max(1, len(panels)))
    rows = max(1, math.ceil(len(panels) / cols))
    figure = Figure(figsize=(4.2 * cols, 3.2 * rows + 0.6))
    for i, (label, series) in enumerate(panels):
        axes = figure.add_subplot(rows, cols, i + 1)
        for name, points in series.items():
            xs = [n for n, _ in points]
            ys = [t["median_s"] * 1e3 for _, t in points]
            cis = [t.get("ci95_s") or [t["median_s"]] * 2 for _, t in points]
            errors = [[max(0.0, y - lo * 1e3) for y, (lo, _) in zip(ys, cis)],
                      [max(0.0, hi * 1e3 - y) for y, (_, hi) in zip(ys, cis)]]
            axes.errorbar(xs, ys, yerr=errors, linestyle=SIZE_STYLES[name], marker="o", markersize=3,
                          capsize=2, label=name)
        if ceiling:
            xs = sorted({n for points in series.values() for n, _ in points})
            axes.plot(xs, [n / (ceiling["bandwidth_gbps"] * 1e9) * 1e3 for n in xs], color="red",
                      linestyle="--", linewidth=1, label="stream bandwidth")
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_title(label, fontsize="medium")
        axes.set_xlabel("bytes moved")
        axes.set_ylabel("median ms")
        if i == 0:
            axes.legend(fontsize="x-small")
    if not panels:
        axes = figure.add_subplot()
        axes.text(0.5, 0.5, "not measured (no bench.json with timings)", ha="center", va="center",
                  transform=axes.transAxes)
    figure.suptitle("Time against size, freed memory kept")
    figure.tight_layout()
    _save(figure, path)


# ---------------------------------------------------------------------------------------------
# HTML


PAGE_STYLE = ("body{font-family:system-ui,sans-serif;max-width:90em;margin:1em auto;padding:0 1em}"
              "table{border-collapse:collapse;font-size:small;margin-bottom:1em}"
              "th,td{border:1px solid #bbb;padding:2px 6px;text-align:left;vertical-align:top}"
              "img{max-width:100%}code{background:#eee;padding:0 2px}")


def _data_uri(path: str) -> str:
    mime = mimetypes.guess_type(path)[0] or "application/octet-stream"
    with open(path, "rb") as f:
        return f"data:{mime};base64,{base64.b64encode(f.read()).decode('ascii')}"


def html_page(markdown_text: str, base_dir: str, title: str = "Auto-Perfect report") -> str:
    """The markdown report as one self-contained HTML page: images linked relative to `base_dir`
    are embedded as data URIs, so the page reads the same opened from disk, mailed, or inside the
    `snakemake --report` HTML (which shows an HTML result inline and a markdown one only as a
    download). Raw HTML in the markdown is escaped, not passed through."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(markdown_text)
    for token in tokens:
        for child in token.children or ():
            src = child.attrGet("src") if child.type == "image" else None
            if src and "://" not in src and not src.startswith("data:"):
                local = os.path.join(base_dir, src)
                if os.path.isfile(local):
                    child.attrSet("src", _data_uri(local))
    body = md.renderer.render(tokens, md.options, {})
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f"<title>{html.escape(title)}</title>\n<style>{PAGE_STYLE}</style>\n</head>\n"
            f"<body>\n{body}</body>\n</html>\n")


# ---------------------------------------------------------------------------------------------
# Entry


def mutants_section(results_dir: str, ops: list[str], backends: list[str]) -> list[str]:
    """Planted bugs (results/{op}/{backend}/mutants.json, from `snakemake mutants`): how many the
    judge rejects beside a KernelBench-style check, and which classes each lets through."""
    lines = ["## Planted bugs: the judge against allclose", "",
             "Bug classes planted into each verified variant of each kernel (autoperfect.mutants); a missed "
             "one names its variant. *allclose* is "
             "KernelBench's check: the spec's shapes, one normal draw, rtol = atol = 1e-2 against the "
             "float64 reference.", "",
             _table_row(["op/backend", "planted", "judge caught", "allclose caught", "missed by the judge",
                         "missed by allclose"]),
             _table_row(["---"] * 6)]
    for op in ops:
        for backend in backends:
            data, problem = read_json(os.path.join(results_dir, op, backend, "mutants.json"))
            if data is None or "skipped" in data:
                why = shorten(data["skipped"]) if data else f"not run ({problem}; `snakemake mutants`)"
                lines.append(_table_row([f"{op}/{backend}", why] + [NONE] * 4))
                continue
            planted = [m for m in data.get("mutants", []) if "judge" in m]
            named = lambda m: f"{m['class']} ({m['variant']})" if "variant" in m else m["class"]  # noqa: E731
            missed = {side: ", ".join(named(m) for m in planted if not m[side]["caught"]) or NONE
                      for side in ("judge", "baseline")}
            planted_n = data["planted"]
            lines.append(_table_row([f"{op}/{backend}", str(planted_n), f"{data['caught']}/{planted_n}",
                                     f"{data['baseline_caught']}/{planted_n}", missed["judge"],
                                     missed["baseline"]]))
    return lines + [""]


def choice_section(rows: list[Row]) -> list[str]:
    """Which schedule variant each kernel runs (bench.json's `variants`): every verified variant's
    median in the chooser's own interleaved rounds, and the chosen one's paired speedup over the
    next fastest, whose interval says whether the choice is more than the noise."""
    lines = ["## Schedule choice", "",
             "Each kernel's verified variants, timed against each other in interleaved rounds before the "
             "benchmark (medians, ms); the chosen one's speedup over the next fastest with a paired "
             "bootstrap 95% interval (one reaching 1: the two are not told apart, and either could be "
             "chosen in another run).", "",
             _table_row(["op/backend", "kernel", "chosen", "over the next fastest [95% CI]", "every variant (ms)"]),
             _table_row(["---"] * 5)]
    for row in rows:  # load_row read a bench.json only for a kernel that passed (a failed one's is stale)
        if not row.variants:
            why = row.verdict if row.verdict != "passed" else "no variants recorded"
            lines.append(_table_row([row.label, why] + [NONE] * 3))
            continue
        for kernel, c in row.variants.items():
            medians = c.get("median_s") or {}
            runner = c.get("over_runner_up")
            versus = (f"{runner['median']:.2f}x [{runner['ci95'][0]:.2f}, {runner['ci95'][1]:.2f}] over "
                      f"{runner['variant']}" if runner else ("the only variant" if not medians else NONE))
            every = ", ".join(f"{v} {t * 1e3:.3f}" for v, t in sorted(medians.items(), key=lambda x: x[1]))
            lines.append(_table_row([row.label, kernel, c["chosen"], versus, every or NONE]))
    return lines + [""]


def schedule_model_section(results_dir: str) -> list[str]:
    """The learned schedule model scored on this run's variant medians (results/schedule_model.json):
    each kernel ranked by a model fitted on the others, as the runtime ranks a kernel nobody timed."""
    lines = ["## Schedule model: ranking a kernel's variants before timing them", ""]
    data, problem = read_json(os.path.join(results_dir, "schedule_model.json"))
    if data is None:
        return lines + [f"Not measured ({problem}; the pipeline's `schedule_model` rule writes it).", ""]
    top = data["top"]
    for backend, b in sorted(data["backends"].items()):
        s = b["summary"]
        if not s["launches"]:
            lines += [f"{backend}: nothing to score: a kernel with more than {top} variants timed, and "
                      f"{data['min_kernels']} others with several, are needed.", ""]
            continue
        lines += [f"{backend}: each kernel's variants ranked by a ridge model of the schedule knobs fitted on "
                  f"the other kernels' medians in this run (leave one out; autoperfect.schedule_model). The "
                  f"runtime gates and times the first {top} so ranked of a kernel never timed before, the "
                  f"rest only if none of them passes. The fastest was among them in {s['fastest_in_top']} of "
                  f"{s['launches']} kernels with more than {top}; gating only them would have cost {s['mean_regret']:.1%} on "
                  f"average (worst {s['worst_regret']:.1%}) over the fastest, against "
                  f"{s['mean_random_pair_regret']:.1%} for a pair chosen at random; rank correlation with "
                  f"the measured order {s['mean_spearman']:.2f} on average.", "",
                  _table_row(["op", "kernel", "fastest measured", f"the model's first {top}", "cost of gating only them"]),
                  _table_row(["---"] * 5)]
        for r in b["launches"]:
            lines.append(_table_row([r.get("op", NONE), r["kernel"], r["fastest"], ", ".join(r["order"][:top]),
                                     f"{r['regret']:.1%}"]))
        weights = (b.get("model") or {}).get("largest_weights") or []
        if weights:
            lines += ["", "Largest weights of the model fitted on every kernel (on the log of the time; below "
                      "zero: faster): " + ", ".join(f"{k} {v:+.3f}" for k, v in weights) + "."]
        lines.append("")
    return lines


def fusion_section(results_dir: str, ops: list[str]) -> list[str]:
    """What the fuse stage made of each op (results/{op}/regions.json): its regions, each kernel's
    class, domain and operations, and the fusions it refused, with their reasons."""
    lines = ["## What was fused", "",
             "Each op's regions (`results/{op}/regions.json`): the kernels generated for it, and what was "
             "left to MLX or not fused, with the reasons.", "",
             _table_row(["op", "regions", "kernels", "refused fusions"]), _table_row(["---"] * 4)]
    for op in ops:
        data, problem = read_json(os.path.join(results_dir, op, "regions.json"))
        if data is None:
            lines.append(_table_row([op, problem, "–", "–"]))
            continue
        kernels = [f"{r.get('class')} {r.get('domain')}: {', '.join(r.get('ops', []))}"
                   for r in data.get("regions", []) if r.get("kind") == "kernel"]
        refused = Counter(d.get("reason", "?") for d in data.get("decisions", []) if not d.get("fused"))
        lines.append(_table_row([op, str(data.get("summary", "–")), "; ".join(kernels) or "–",
                                 "; ".join(shorten(f"{r} (x{n})" if n > 1 else r) for r, n in refused.items())
                                 or "none"]))
    return lines + [""]


def gpu_section(results_dir: str) -> list[str]:
    """The GPU run's figures (autoperfect.gpu_bench, e.g. on the lent H200: results/h200), when the
    run's summary is there; docs/gpu-h200.md keeps the last one measured."""
    from . import gpu_bench

    lines = ["## GPU: the cuda backend through MLX's CUDA build", ""]
    summary, problem = read_json(os.path.join(results_dir, "h200", "summary.json"))
    if summary is None:
        recorded = _recorded_gpu_figures(os.path.join(os.path.dirname(os.path.abspath(results_dir)), "docs"))
        return lines + [f"Not measured on this machine ({problem}; `python -m autoperfect.gpu_bench "
                        "configs/h200.yaml results/h200` on a machine where MLX sees a CUDA GPU writes it)."
                        + (" The last GPU run, as recorded in docs/gpu-h200.md (the earlier ones are there "
                           "too):" if recorded else ""),
                        "", *recorded, ""]
    machine = summary.get("machine") or {}
    return lines + [f"On {machine.get('gpu')}, measured {summary.get('measured_at')}.", "",
                    *gpu_bench.markdown(summary), ""]


def _recorded_gpu_figures(docs: str) -> list[str]:
    """The last run of the committed GPU record: the first part of docs/gpu-h200.md's `## Figures`
    (its headings demoted one level), and the tables of the highest-numbered docs/h200/run*/summary.md."""
    try:
        text = open(os.path.join(docs, "gpu-h200.md")).read()
    except OSError:
        return []
    figures = text.find("## Figures")
    start = text.find("\n### ", figures) if figures >= 0 else -1
    if start < 0:
        return []
    end = min([i for i in (text.find("\n### ", start + 1), text.find("\n## ", start + 1)) if i > 0], default=len(text))
    lines = [("#" + line) if line.startswith("#") else line for line in text[start + 1:end].splitlines()]
    runs = {int(m[1]): path for path in glob.glob(os.path.join(docs, "h200", "run*", "summary.md"))
            if (m := re.fullmatch(r"run(\d+)", os.path.basename(os.path.dirname(path))))}
    if runs:
        last = runs[max(runs)]
        with open(last) as tables:
            lines += ["", f"Its tables ({os.path.relpath(last, os.path.dirname(docs))}):", "", *tables.read().splitlines()]
    return lines


def summation_section(results_dir: str) -> list[str]:
    """Compensated summation's trade, by row length (results/summation.json)."""
    lines = ["## Compensated row sums: what they cost and what they buy", ""]
    data, problem = read_json(os.path.join(results_dir, "summation.json"))
    if data is None:
        return lines + [f"Not measured ({problem}; `python -m autoperfect.summation` writes it).", ""]
    lines += [f"A row sum of positive float32 terms ({data['elements_per_call']} per call), plain SIMD sum "
              f"against blocks of {data['block']} added with compensation; errors against a float64 sum of "
              f"the same inputs, in units of u = 2^-24; times interleaved (medians), measured "
              f"{data.get('measured_at')}, {data.get('condition')}. Kernels compensate rows of "
              f"{data['compensate_from']} terms or more.", "",
              "| row length | rows | plain: worst / mean error (u) | compensated: worst / mean error (u) "
              "| plain (ms) | compensated (ms) | time ratio [95% CI] | compensated by default |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in data["lengths"]:
        p, c, t = r["plain"], r["compensated"], r["compensated_time_ratio"]
        lines.append(_table_row([str(r["n"]), str(r["rows"]),
                                 f"{p['max_rel_error_u']:.1f} / {p['mean_rel_error_u']:.2f}",
                                 f"{c['max_rel_error_u']:.1f} / {c['mean_rel_error_u']:.2f}",
                                 _ms(p), _ms(c), f"{t['median']:.2f}x [{t['ci95'][0]:.2f}, {t['ci95'][1]:.2f}]",
                                 "yes" if r["compensated_by_default"] else "no"]))
    return lines + [""]


PLOTS = ("speedup", "roofline", "sizes")  # {plots_dir}/{name}.png: rules/report.smk names each


def build_report(results_dir: str, ops: list[str], backends: list[str], out_md: str,
                 plots_dir: str, out_html: str | None = None) -> None:
    """Write `out_md` and its plots (speedup.png, roofline.png, sizes.png in `plots_dir`) from the
    artifacts, and with `out_html` the same page as self-contained HTML."""
    rows = [load_row(results_dir, op, backend) for op in ops for backend in backends]
    ceiling, ceiling_problem = load_ceiling(results_dir)
    plots = {name: os.path.join(plots_dir, f"{name}.png") for name in PLOTS}
    speedup_plot(rows, plots["speedup"])
    bandwidth_plot(rows, ceiling, plots["roofline"])
    sizes_plot(results_dir, ops, backends, ceiling, plots["sizes"])
    md_dir = os.path.dirname(os.path.abspath(out_md))
    links = {name: os.path.relpath(os.path.abspath(p), md_dir).replace(os.sep, "/")
             for name, p in plots.items()}
    text = (render(rows, ceiling, ceiling_problem, links)
            + "\n".join(fusion_section(results_dir, ops)) + "\n"
            + "\n".join(runtime_section(results_dir)) + "\n"
            + "\n".join(summation_section(results_dir)) + "\n"
            + "\n".join(choice_section(rows)) + "\n"
            + "\n".join(schedule_model_section(results_dir)) + "\n"
            + "\n".join(mutants_section(results_dir, ops, backends)) + "\n"
            + "\n".join(gpu_section(results_dir)) + "\n")
    artifacts.write_text(out_md, text)
    if out_html is not None:
        artifacts.write_text(out_html, html_page(text, md_dir))
