"""The report: built from fixture artifacts; failures show their reason and never a timing."""

import json

import pytest

from autoperfect import report

REASON = "element 17 of out (input class: subnormals): expected 1.5 got 2.0"
WARM = "warm allocator: glibc keeps freed memory (MALLOC_MMAP_THRESHOLD_=1073741824)"
STEADY = f"{WARM}; steady: bursts of 9 back-to-back calls taking 9 copies of the inputs in turn"


def _stats(median_s):
    return {"median_s": median_s, "ci95_s": [0.9 * median_s, 1.1 * median_s], "samples": 21,
            "min_s": 0.8 * median_s}


def _section(kernel_s, condition):
    baselines = {"mlx_eager": _stats(0.024), "mlx_compile": _stats(0.0103), "numpy": _stats(0.025)}
    speedup = {name: {"median": s["median_s"] / kernel_s, "ci95": [0.9 * s["median_s"] / kernel_s,
                                                                    1.1 * s["median_s"] / kernel_s]}
               for name, s in baselines.items()}
    return {"kernel": _stats(kernel_s), "baselines": baselines, "speedup": speedup, "condition": condition}


def _bench(kernel_s):
    return {"op": "chain", "backend": "cpu", **_section(kernel_s, WARM), "bytes_moved": 4 * 4 * (1 << 24),
            "achieved_gbps": 26.0, "roofline_fraction": 0.55,
            "default_allocator": _section(0.0371, "default glibc allocator"),
            "steady": _section(0.0081, STEADY),
            "machine": {"cpu": "Test CPU", "cores": 2}, "measured_at": "2026-01-01T00:00:00+00:00",
            "variants": {"k_1": {"chosen": "rows_v16", "median_s": {"rows": 0.00107, "rows_v16": 0.00097},
                                 "over_runner_up": {"variant": "rows", "median": 1.1, "ci95": [0.97, 1.21]}}}}


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.fixture
def results(tmp_path):
    root = tmp_path / "results"
    _write(root / "roofline.json", {"copy_gbps": 45.9, "triad_gbps": 47.9, "bandwidth_gbps": 47.9,
                                    "fma_gflops": 550.0, "threads": 2, "compiler": "gcc 12",
                                    "measured_at": "2026-01-01T00:00:00+00:00",
                                    "machine": {"cpu": "Test CPU", "cores": 2, "mlx": "0.32.4"}})
    _write(root / "chain" / "cpu" / "validation.json", {"passed": True, "checks": []})
    _write(root / "chain" / "cpu" / "bench.json", _bench(0.0097))
    _write(root / "softmax" / "cpu" / "validation.json", {"passed": False, "reason": REASON})
    _write(root / "softmax" / "cpu" / "bench.json", _bench(0.0654321))  # stale: must not be shown
    return root


def _build(results, ops=("chain", "softmax")):
    out_md = results / "report.md"
    report.build_report(str(results), list(ops), ["cpu"], str(out_md), str(results / "plots"))
    return out_md.read_text()


def _rows_of(markdown, op):
    """The op's rows in the timing tables (the fusion section, after them, has a row an op too)."""
    timings = markdown.split("## What was fused")[0]
    return [line for line in timings.splitlines() if line.startswith(f"| {op} |")]


def test_report_shows_the_passing_op_in_every_condition(results):
    markdown = _build(results)
    chain = _rows_of(markdown, "chain")
    assert len(chain) == 3   # single calls, steady state, default allocator
    assert "9.7 [8.73, 10.7]" in chain[0] and "8.1 [7.29, 8.91]" in chain[1] and "37.1" in chain[2]
    assert f"Measured under: {STEADY}." in markdown
    assert "2.47x" in chain[0]  # mlx_eager 24 ms over the kernel's 9.7 ms
    assert "45.9 GB/s" in markdown and "550 GFLOP/s" in markdown
    assert f"Measured under: {WARM}." in markdown
    assert "Measured under: default glibc allocator." in markdown


def test_failing_op_shows_its_reason_and_no_timing(results):
    markdown = _build(results)
    softmax = _rows_of(markdown, "softmax")
    assert softmax and all(REASON in line and "FAILED" in line for line in softmax)
    assert "65.4" not in markdown and "GB/s" not in "".join(softmax)
    assert all(cell.strip() == report.NONE for line in softmax for cell in line.split("|")[4:-1])


def test_an_op_the_backend_cannot_render_is_unsupported_not_failed(results):
    """validation.json's `unsupported` (every problem a kernel the backend can't render, e.g. integer
    arithmetic) reads UNSUPPORTED, so it is not taken for a wrong result."""
    path = results / "softmax" / "cpu" / "validation.json"
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "unsupported": True}))
    softmax = _rows_of(_build(results), "softmax")
    assert softmax and all("UNSUPPORTED: " in line and "FAILED" not in line for line in softmax)


def test_plots_exist_and_are_linked_relatively(results):
    markdown = _build(results)
    for name in ("speedup", "roofline"):
        assert (results / "plots" / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        assert f"![{name}](plots/{name}.png)" in markdown


def test_missing_and_malformed_artifacts_become_words(results):
    (results / "roofline.json").unlink()
    _write(results / "gelu" / "cpu" / "validation.json", {"passed": True})
    _write(results / "rmsnorm" / "cpu" / "validation.json", {"passed": True})
    _write(results / "rmsnorm" / "cpu" / "bench.json", {"kernel": {}})
    _write(results / "softmax" / "cpu" / "validation.json", {"passed": True})
    broken = _bench(0.01)
    broken["speedup"]["numpy"]["ci95"] = "wide"
    _write(results / "softmax" / "cpu" / "bench.json", broken)
    markdown = _build(results, ops=("chain", "gelu", "layernorm", "rmsnorm", "softmax"))
    assert "roofline.json missing" in markdown
    assert "passed; bench.json missing" in _rows_of(markdown, "gelu")[0]
    assert "validation.json missing" in _rows_of(markdown, "layernorm")[0]
    assert "bench.json malformed" in _rows_of(markdown, "rmsnorm")[0]
    assert "ci95 is 'wide'" in _rows_of(markdown, "softmax")[0]
    assert "Machine: Test CPU" in markdown


def test_shorten_keeps_one_line_within_the_limit():
    assert report.shorten("a\nb   c") == "a b c"
    assert len(report.shorten("x" * 500)) == report.REASON_CHARS


def test_the_schedule_choice_says_whether_it_beats_the_noise(results):
    """Each kernel's chosen variant, its paired speedup over the next fastest (an interval reaching
    1 is shown, so the reader sees the two are not told apart), every variant's median; a failed
    kernel's stale bench.json is not read."""
    markdown = _build(results)
    section = markdown.split("## Schedule choice", 1)[1].split("\n## ", 1)[0]
    assert "| chain/cpu | k_1 | rows_v16 | 1.10x [0.97, 1.21] over rows | rows_v16 0.970, rows 1.070 |" in section
    (softmax,) = [line for line in section.splitlines() if line.startswith("| softmax/cpu |")]
    assert "FAILED" in softmax and "rows_v16" not in softmax


def test_the_schedule_model_section_shows_each_kernel_ranked_without_it(results):
    """results/schedule_model.json as a sentence of totals, a row per kernel and the largest weights;
    missing, the section says what writes it."""
    assert "Not measured (schedule_model.json missing" in _build(results)
    _write(results / "schedule_model.json", {"top": 4, "min_kernels": 3, "backends": {"cpu": {
        "summary": {"launches": 2, "top": 4, "fastest_in_top": 1, "mean_regret": 0.05, "worst_regret": 0.1,
                    "mean_random_pair_regret": 0.15, "mean_spearman": 0.5},
        "launches": [{"op": "chain", "kernel": "k_1", "fastest": "rows_v16", "regret": 0.1,
                      "order": ["rows", "rows_split", "a", "b", "rows_v16"]},
                     {"op": "softmax", "kernel": "k_2", "fastest": "a", "regret": 0.0,
                      "order": ["a", "b", "c", "d", "e"]}],
        "model": {"largest_weights": [["lanes", -0.4], ["split", 0.2]]}}}})
    section = _build(results).split("## Schedule model", 1)[1].split("\n## ", 1)[0]
    assert "The fastest was among them in 1 of 2 kernels with more than 4" in section
    assert "5.0% on average (worst 10.0%) over the fastest, against 15.0% for a pair" in section
    assert "| chain | k_1 | rows_v16 | rows, rows_split, a, b | 10.0% |" in section
    assert "lanes -0.400, split +0.200." in section


def test_an_empty_results_dir_still_gives_a_report_and_plots(tmp_path):
    markdown = _build(tmp_path / "results", ops=("chain",))
    assert "validation.json missing" in markdown and "roofline.json missing" in markdown
    assert (tmp_path / "results" / "plots" / "speedup.png").exists()
    assert (tmp_path / "results" / "plots" / "roofline.png").exists()


def test_the_bound_column_names_what_binds_and_the_share_of_the_roofline(results):
    """bench.json's classification: the roofline's time over the kernel's median, per condition."""
    data = json.loads((results / "chain" / "cpu" / "bench.json").read_text())
    data["classification"] = {"seconds": 0.00485, "bound": "compute (exp)", "memory_s": 0.004, "compute_s": 0.00485}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    (results / "roofline.json").write_text(json.dumps({
        **json.loads((results / "roofline.json").read_text()),
        "functions": {"rates": {"exp": {"per_second": 7.04e9, "schedule": "libmvec_v16"}}}}))
    warm, _, default = _rows_of(_build(results), "chain")
    assert "compute (exp): 50%" in warm          # 4.85 ms of exps against the kernel's 9.7 ms
    assert "compute (exp): 13%" in default       # and against 37.1 ms under glibc's defaults
    assert "exp 7" in _build(results)


def test_a_bench_json_without_a_classification_shows_no_bound(results):
    assert all(line.rstrip().endswith(f"| {report.NONE} |") for line in _rows_of(_build(results), "chain"))


def test_the_stream_column_is_the_share_of_the_stream_kernels_in_the_same_rounds(results):
    """bench.json's stream_in_rounds (per condition): the kernel's GB/s over the best stream kernel
    timed in its own rounds; a file without it shows none."""
    data = json.loads((results / "chain" / "cpu" / "bench.json").read_text())
    data["stream_in_rounds"] = {"gbps": 2 * 4 * 4 * (1 << 24) / 0.0097 / 1e9}   # twice the kernel's rate
    data["default_allocator"]["stream_in_rounds"] = {"gbps": 4 * 4 * (1 << 24) / 0.0371 / 1e9}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    warm, _, default = _rows_of(_build(results), "chain")
    assert warm.rstrip().endswith("| 50% of 55.3 |")
    assert default.rstrip().endswith("| 100% of 7.2 |")


def test_the_goals_section_checks_the_warm_figures_against_the_cpu_goals(results):
    """Stream share, the mix's ceiling, the baselines to beat and the geometric mean over
    torch.compile, each verdict from the figures: chain is memory-bound at 28 GB/s of 47.9 (58%,
    short of 80%), behind mx.compile's median nowhere (1.06x) and behind torch.compile (0.9x)."""
    data = json.loads((results / "chain" / "cpu" / "bench.json").read_text())
    data["classification"] = {"seconds": 0.0056, "bound": "memory", "memory_s": 0.0056, "compute_s": 0.001}
    data["bytes_read"] = 3 * 4 * (1 << 24)
    data["baselines"]["torch_compile"] = _stats(0.00873)
    data["speedup"]["torch_compile"] = {"median": 0.9, "ci95": [0.85, 0.95]}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    (results / "roofline.json").write_text(json.dumps({
        **json.loads((results / "roofline.json").read_text()), "read_gbps": 30.0, "copy_nt_gbps": 47.9}))
    section = _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]
    (row,) = [line for line in section.splitlines() if line.startswith("| chain/cpu |")]
    mixed = 100 * (4 * 4 * (1 << 24) / 0.0097 / 1e9) / report.roofline.mixed_gbps(3 * 4 * (1 << 24), 4 * (1 << 24),
                                                                                  {"read_gbps": 30.0, "copy_nt_gbps": 47.9})
    assert f"| 268 | memory | 58% | {mixed:.0f}% | – |" in row and "0.90x [0.85, 0.95]" in row  # no rounds recorded
    assert "of the stream bandwidth, single calls: not chain (58%)" in section   # the verdict names the op
    assert "measured in the op's own rounds (the stream kernels timed beside it: the roofline's 47.9 GB/s " \
           "is another moment's), single calls: not chain (–)" in section    # none recorded: no verdict of met
    assert "the stream kernels themselves" not in section
    data["stream_in_rounds"] = {"gbps": 40.0, "mixed_gbps": 35.0, "kernels": {}}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    section = _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]
    assert f"moment's), single calls: not chain ({100 * (4 * 4 * (1 << 24) / 0.0097 / 1e9) / 40.0:.0f}%)" in section
    assert "in those rounds (an op that only reads held to the read kernel), single calls: not chain (79%)" \
        in section   # 27.7 GB/s of its mix's 35
    assert "the stream kernels themselves in those rounds, single calls: 40.0 GB/s, 84% of the roofline's " \
           "47.9 GB/s" in section   # what the single-call condition left the copy
    assert report._streams_then_line([40.0, 30.0], 50.0) == [
        "  - the stream kernels themselves in those rounds, single calls: 30.0-40.0 GB/s, 60-80% of the "
        "roofline's 50.0 GB/s (the best copy or triad beside each op)"]
    data["stream_in_rounds"]["gbps"] = 30.0   # 27.7 GB/s of 30: 92%
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert "moment's), single calls: all" in _build(results)
    data["stream_in_rounds"]["mixed_gbps"] = 30.0
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert "the read kernel), single calls: all" in _build(results)
    data["stream_in_rounds"]["mixed_gbps"] = 35.0
    data["stream_in_rounds"]["gbps"] = 40.0
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    section = _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]
    (row,) = [line for line in section.splitlines() if line.startswith("| chain/cpu |")]
    assert f"| {mixed:.0f}% | {100 * (4 * 4 * (1 << 24) / 0.0097 / 1e9) / 35.0:.0f}% |" in row
    # the rounds' intervals, where bench.json has them, beside the shares they bound; malformed: none
    data["stream_in_rounds"]["shares_ci95"] = {"gbps": [0.61, 0.77], "mixed_gbps": [0.70, 0.88]}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    section = _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]
    (row,) = [line for line in section.splitlines() if line.startswith("| chain/cpu |")]
    assert f"| {100 * (4 * 4 * (1 << 24) / 0.0097 / 1e9) / 35.0:.0f}% [70, 88] |" in row
    assert f"single calls: not chain ({100 * (4 * 4 * (1 << 24) / 0.0097 / 1e9) / 40.0:.0f}% [61, 77])" in section
    assert "held to the read kernel), single calls: not chain (79% [70, 88])" in section
    data["stream_in_rounds"]["shares_ci95"] = {"gbps": [0.9, 0.5], "mixed_gbps": "wide"}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert "not chain (79%)" in _build(results)
    del data["stream_in_rounds"]["shares_ci95"]
    assert "not chain behind torch_compile (0.90x)" in section
    assert "0.90x over 1 ops (goal 1.2x): not met" in section


def test_the_bar_is_beyond_a_single_call_whose_dispatch_and_traffic_at_its_ceiling_take_longer(results):
    """The least a single call can take, MLX's dispatch floor measured in its rounds plus its traffic
    at its mix's ceiling from the roofline, against the time its traffic takes at 80% of the stream
    bandwidth: chain's 268 MB take 7.01 ms at 80% of 47.9 GB/s and 6.33 ms at its mix's 42.4 GB/s
    (reads at 38, writes at what the copy adds), so a floor of 0.5 ms leaves the bar within reach and
    one of 1 ms puts it beyond; a bench.json without a floor gives no line."""
    data = json.loads((results / "chain" / "cpu" / "bench.json").read_text())
    data["classification"] = {"seconds": 0.0056, "bound": "memory", "memory_s": 0.0056, "compute_s": 0.001}
    data["bytes_read"] = 3 * 4 * (1 << 24)
    (results / "roofline.json").write_text(json.dumps({
        **json.loads((results / "roofline.json").read_text()), "read_gbps": 38.0, "copy_nt_gbps": 47.9}))
    moved = 4 * 4 * (1 << 24)
    mix = report.roofline.mixed_gbps(3 * 4 * (1 << 24), 4 * (1 << 24), {"read_gbps": 38.0, "copy_nt_gbps": 47.9})
    bar_ms, traffic_ms = 1e3 * moved / (0.8 * 47.9e9), 1e3 * moved / (mix * 1e9)
    assert traffic_ms < bar_ms - 0.5 and traffic_ms > bar_ms - 1   # the figures the two cases straddle
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert "within a single call's reach" not in _build(results)     # no floor recorded
    data["dispatch_floor"] = _stats(0.0005)
    data["steady"]["dispatch_floor"] = _stats(0.05)                  # single calls' floor only
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert "one-element op timed in its rounds, 0.5 ms): beyond it: none; within it: chain" in _build(results)
    data["dispatch_floor"] = _stats(0.001)
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert (f"1 ms): beyond it: chain ({traffic_ms + 1:.3g} ms at the least against {bar_ms:.3g} ms); "
            "within it: none") in _build(results)
    data["dispatch_floor"] = {"median_s": -1.0}                      # malformed: no line
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert "within a single call's reach" not in _build(results)
    assert report._reach_line([("a", 1e-4, 0.5e-3, 0.6e-3), ("b", 2e-4, 0.7e-3, 0.6e-3)]) == [
        "  - the bar within a single call's reach (the least a call can take: its traffic at that ceiling, after "
        "MLX's dispatch of a one-element op timed in its rounds, 0.1-0.2 ms): beyond it: b (0.7 ms at the least "
        "against 0.6 ms); within it: a"]


def test_the_goals_section_holds_ops_to_the_least_a_native_call_takes_in_their_rounds(results):
    """The least a native call can take in the op's rounds, its traffic at the mix's ceiling timed
    there (35 GB/s: 7.67 ms for chain's 268 MB) after the one-element MLX op timed there, over the
    op's time (9.7 ms single calls, 8.1 steady): a floor of 0.2 ms makes 81%, of 0.05 ms 79.6%, a
    miss; its interval where bench.json has one; no floor or no ceiling recorded, no verdict of met."""
    def line():
        (found,) = [t for t in _build(results).splitlines() if "the least a native call" in t]
        return found.split("escapes), ", 1)[1]

    data = json.loads((results / "chain" / "cpu" / "bench.json").read_text())
    data["classification"] = {"seconds": 0.0056, "bound": "memory", "memory_s": 0.0056, "compute_s": 0.001}
    data["stream_in_rounds"] = {"gbps": 40.0, "mixed_gbps": 35.0, "kernels": {}}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert line() == "single calls: not chain (–); steady state: not chain (–)"   # no floor: no verdict
    data["dispatch_floor"] = _stats(0.0002)
    data["steady"].update(dispatch_floor=_stats(0.0001), stream_in_rounds={"gbps": 48.0, "mixed_gbps": 42.0})
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert line() == "single calls: all; steady state: all"   # (7.67 + 0.2) / 9.7 and (6.39 + 0.1) / 8.1
    data["dispatch_floor"] = _stats(0.00005)
    data["stream_in_rounds"]["shares_ci95"] = {"native": [0.75, 0.85]}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert line() == "single calls: not chain (79.6% [75, 85]); steady state: all"
    del data["stream_in_rounds"]
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert line() == "single calls: not chain (–); steady state: all"


def test_a_miss_that_whole_percents_would_round_up_to_the_bar_gets_a_decimal():
    assert report._percent(0.797, below=0.8) == "79.7%"
    assert report._percent(0.797, (0.7, 0.9), below=0.8) == "79.7% [70, 90]"
    assert report._percent(0.75, below=0.8) == "75%"
    assert report._percent(0.797) == "80%"       # no bar: whole percents
    assert report._percent(None, below=0.8) == "–"


def test_the_goals_section_says_how_much_cpu_time_the_host_took(results):
    """The steal share bench.json records for an op's single-call rounds, with those of the rounds
    timed again for it and set aside, and roofline.json's for its streams, is printed beside the
    verdicts; none recorded (older files), or a value that is no share, prints no line."""
    def goals():
        return _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]

    data = json.loads((results / "chain" / "cpu" / "bench.json").read_text())
    data["classification"] = {"seconds": 0.0056, "bound": "memory", "memory_s": 0.0056, "compute_s": 0.001}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))  # held to the memory bar
    assert "steal" not in goals()
    data["host_steal"] = 0.124
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert "  - CPU time the host gave other guests (steal) while each op's single calls were timed: chain " \
           "12.4%\n" in goals()
    (results / "roofline.json").write_text(json.dumps({
        **json.loads((results / "roofline.json").read_text()), "host_steal": 0.005}))
    assert "timed: chain 12.4%; while the roofline's streams ran: 0.5%" in goals()
    data["host_steal_retaken"] = [0.204, 0.13]
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert "timed: chain 12.4% (rounds at 20.4%, 13.0% timed again and set aside); while" in goals()
    (results / "roofline.json").write_text(json.dumps({
        **json.loads((results / "roofline.json").read_text()), "host_steal_retaken": [0.09]}))
    assert "while the roofline's streams ran: 0.5% (rounds at 9.0% timed again and set aside)" in goals()
    data["host_steal"], data["host_steal_retaken"] = 7, "bad"
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert "timed: –; while the roofline's streams ran: 0.5%" in goals()


def test_the_goals_section_holds_ops_to_the_roofline_measured_in_their_own_process(results):
    """Where bench.json has the roofline's stream kernels run again in the op's own process
    (`roofline_in_process`), the 80% bar gets a verdict against that too, in single calls and in the
    steady state (both timed in that process), and the line gives the range beside the roofline's
    own figure; without it, no such line."""
    data = json.loads((results / "chain" / "cpu" / "bench.json").read_text())
    data["classification"] = {"seconds": 0.0056, "bound": "memory", "memory_s": 0.0056, "compute_s": 0.001}
    data["steady"]["kernel"] = _stats(0.0065)    # 41.3 GB/s; single calls 27.7 GB/s (0.0097 s)
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert "measured in the op's own process" not in _build(results)
    data["roofline_in_process"] = {"bandwidth_gbps": 33.0}   # 84% and 125%
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    section = _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]
    assert ("measured in the op's own process (the roofline's stream kernels and sizes, run again after its "
            "rounds: 33.0 GB/s, against 47.9 GB/s in the roofline's own), single calls: all; steady state: all") \
        in section
    assert "of the stream bandwidth, single calls: not chain (58%)" in section   # the roofline's own, unchanged
    data["roofline_in_process"] = {"bandwidth_gbps": 40.0}   # 69% and 103%
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert "against 47.9 GB/s in the roofline's own), single calls: not chain (69%); steady state: all" \
        in _build(results)
    assert report._own_process_line("- bar", {"warm": [], "steady": []}, [30.0, None, 41.26], 50.0, False) == [
        "- bar measured in the op's own process (the roofline's stream kernels and sizes, run again after its "
        "rounds: 30.0-41.3 GB/s, against 50.0 GB/s in the roofline's own), single calls: all"]
    assert report._own_process_line("- bar", {"warm": [], "steady": []}, [None], 50.0, True) == []


def test_the_goals_section_checks_the_stream_goal_in_the_steady_state_too(results):
    """The steady state's share of the stream bandwidth and of the stream kernels timed in its own
    bursts sit beside the single calls', and the 80% goal gets a verdict in each; a bench.json
    without a steady section shows none and says it was not measured."""
    data = json.loads((results / "chain" / "cpu" / "bench.json").read_text())
    data["classification"] = {"seconds": 0.0056, "bound": "memory", "memory_s": 0.0056, "compute_s": 0.001}
    data["steady"]["kernel"] = _stats(0.0065)    # 41.3 GB/s of 47.9: 86%
    data["steady"]["stream_in_rounds"] = {"gbps": 45.0, "mixed_gbps": 44.0, "kernels": {}}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    section = _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]
    (row,) = [line for line in section.splitlines() if line.startswith("| chain/cpu |")]
    steady_gbps = 4 * 4 * (1 << 24) / 0.0065 / 1e9
    assert f"| 58% | – | – | {100 * steady_gbps / 47.9:.0f}% | {100 * steady_gbps / 44.0:.0f}% |" in row
    assert "of the stream bandwidth, single calls: not chain (58%)" in section
    assert "of the stream bandwidth, steady state: all" in section
    data["steady"]["kernel"] = _stats(0.0097)
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    assert "steady state: not chain (58%)" in _build(results)
    del data["steady"]
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    markdown = _build(results)
    assert "steady state: – (not measured)" in markdown
    assert "no steady in bench.json" in _rows_of(markdown, "chain")[1]


def test_the_roofline_line_gives_the_median_moments_stream_bandwidth_beside_the_best(results):
    data = json.loads((results / "roofline.json").read_text())
    (results / "roofline.json").write_text(json.dumps({**data, "copy_nt_gbps": 74.4, "triad_nt_gbps": 66.4,
                                                       "bandwidth_gbps": 74.4, "median_bandwidth_gbps": 44.1}))
    assert "the stream bandwidth is the best, 74.4 GB/s; at the median of their samples 44.1)" in _build(results)


def test_the_roofline_line_names_the_kinds_of_page_and_where_the_best_was_reached(results):
    data = json.loads((results / "roofline.json").read_text())
    entries = [{"elements": 1 << 25, "pages": "huge"}, {"elements": 1 << 25, "pages": "base"}]
    (results / "roofline.json").write_text(json.dumps({**data, "sizes": [1 << 25], "pages": "base",
                                                       "by_size": entries}))
    assert "over arrays of 134 MB on 4 KB pages and on huge pages (the best on 4 KB pages)" in _build(results)
    # one kind only (no transparent huge pages on the system): nothing to name
    (results / "roofline.json").write_text(json.dumps({**data, "sizes": [1 << 25], "pages": "default",
                                                       "by_size": [{"elements": 1 << 25, "pages": "default"}]}))
    markdown = _build(results)
    assert "over arrays of 134 MB" in markdown and "pages (the best" not in markdown


def test_the_goals_section_names_ops_their_time_in_cache_holds_below_the_bar(results):
    """bench.json's in_cache.seconds (the kernels alone, in cache, scaled to the op) beside the op's
    traffic at the stream bandwidth: chain's 268 MB take 5.6 ms at 47.9 GB/s and 7.0 ms at 80% of
    it, so 4 ms in cache leaves the bar within reach and 8 ms does not, unless that is a bound (one
    cut timed, each call's fixed cost in it), which decides nothing; a file without the measurement
    shows none."""
    data = json.loads((results / "chain" / "cpu" / "bench.json").read_text())
    data["classification"] = {"seconds": 0.0056, "bound": "memory", "memory_s": 0.0056, "compute_s": 0.001}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))  # held to the memory bar
    section = _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]
    assert "the bar): none measured" in section
    data["in_cache"] = {"divisor": 128, "seconds": 0.004}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    section = _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]
    (row,) = [line for line in section.splitlines() if line.startswith("| chain/cpu |")]
    assert f"| 4, {0.004 * 47.9e9 / (4 * 4 * (1 << 24)):.2f}x |" in row
    assert "the bar): none\n" in section
    data["in_cache"]["seconds"] = 0.008
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    section = _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]
    assert "the bar): chain (8 ms against 7.01 ms)" in section
    data["in_cache"]["fixed_included"] = True  # one cut: a bound, which decides nothing past the bar
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    section = _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]
    (row,) = [line for line in section.splitlines() if line.startswith("| chain/cpu |")]
    assert f"| ≤8, {0.008 * 47.9e9 / (4 * 4 * (1 << 24)):.2f}x |" in row
    assert ("the bar): none; not decided (one cut timed, each call's fixed cost in its figure, which is so "
            "at most): chain (at most 8 ms against 7.01 ms)") in section
    data["in_cache"] = {"skipped": "no L2 size in sysfs"}
    (results / "chain" / "cpu" / "bench.json").write_text(json.dumps(data))
    section = _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]
    (row,) = [line for line in section.splitlines() if line.startswith("| chain/cpu |")]
    assert "| – | 2.47x" in row and "the bar): none measured" in section


def _goals(results):
    return _build(results).split("## The CPU goals", 1)[1].split("\n## ", 1)[0]


def test_an_op_whose_traffic_takes_nearly_as_long_as_its_work_is_held_to_the_stream_bar(results):
    """Work binds chain's roofline at 5.9 ms, its traffic 5.6 ms (95%) or 4.75 (80.5%): held to the
    bar, the bound cell says how near; at 4.7 ms (79.7%) or 4.0 (68%) it is not held, and the
    memory bar says no op qualifies (not "all", which would read as met)."""
    path = results / "chain" / "cpu" / "bench.json"
    data = json.loads(path.read_text())
    for memory_s, cell, verdict in ((0.0056, "compute (exp), memory at 95% of it", "not chain (58%)"),
                                    (0.00475, "compute (exp), memory at 81% of it", "not chain (58%)"),
                                    (0.0047, "compute (exp)", None),     # 79.7%: under MEMORY_NEAR
                                    (0.004, "compute (exp)", None)):
        data["classification"] = {"seconds": 0.0059, "bound": "compute (exp)", "memory_s": memory_s,
                                  "compute_s": 0.0059}
        path.write_text(json.dumps(data))
        section = _goals(results)
        (row,) = [line for line in section.splitlines() if line.startswith("| chain/cpu |")]
        assert f"| 268 | {cell} | 58% |" in row
        assert (f"of the stream bandwidth, single calls: {verdict}" if verdict else
                "of the stream bandwidth: no op qualifies (none is memory-bound and moves 16 MB or more)") in section
        assert ("single calls: all" in section) is False
    assert report.held_to_memory({"bound": "memory", "seconds": 1.0}) and not report.held_to_memory(None)
    assert not report.held_to_memory({"bound": "compute (fma)", "seconds": 1.0})   # no memory time recorded


def test_the_goals_section_puts_the_bar_against_what_each_ops_mix_can_reach(results):
    """80% of the 47.9 GB/s stream bandwidth is 38.3 GB/s: 99.5% of what a read-only op can reach
    at a read kernel of 38.5 GB/s, 72% of a copy's mix at the stream bandwidth's 53.2 GB/s copy."""
    path = results / "chain" / "cpu" / "bench.json"
    data = json.loads(path.read_text())
    data["classification"] = {"seconds": 0.0056, "bound": "memory", "memory_s": 0.0056, "compute_s": 0.001}
    path.write_text(json.dumps(data))
    assert "what each op's traffic can reach" not in _goals(results)   # no reads recorded: no mix
    data["bytes_read"] = data["bytes_moved"]
    path.write_text(json.dumps(data))
    (results / "roofline.json").write_text(json.dumps({
        **json.loads((results / "roofline.json").read_text()), "read_gbps": 38.5, "copy_nt_gbps": 47.9}))
    assert "the read kernel's): chain 99.5%\n" in _goals(results)   # short of 100: a decimal
    data["bytes_read"] = data["bytes_moved"] // 2
    path.write_text(json.dumps(data))
    (results / "roofline.json").write_text(json.dumps({
        **json.loads((results / "roofline.json").read_text()), "copy_nt_gbps": 53.2}))
    assert "the read kernel's): chain 72%\n" in _goals(results)


def test_without_a_gpu_run_the_report_shows_the_last_recorded_one_only(tmp_path):
    docs = tmp_path / "docs"
    (docs / "h200").mkdir(parents=True)
    (docs / "gpu-h200.md").write_text("# GPU\n\nintro\n\n## Figures\n\n### Run 10: newest\n\nnew text\n\n"
                                      "### Run 9: older\n\nold text\n\n## What they say\n\nlater\n")
    for n, table in ((9, "| nine |"), (10, "| ten |")):
        (docs / "h200" / f"run{n}").mkdir()
        (docs / "h200" / f"run{n}" / "summary.md").write_text(table + "\n")
    text = "\n".join(report.gpu_section(str(tmp_path / "results")))
    assert "#### Run 10: newest" in text and "new text" in text
    assert "old text" not in text and "later" not in text
    assert "(docs/h200/run10/summary.md)" in text and "| ten |" in text and "| nine |" not in text


def test_the_fusion_section_names_each_ops_kernels_and_why_a_fusion_was_refused(tmp_path):
    _write(tmp_path / "split" / "regions.json", {
        "summary": "5 computed nodes -> 2 fused kernel(s), 1 left to MLX",
        "regions": [{"kind": "kernel", "class": "row", "domain": [8, 16], "ops": ["max", "sub", "exp"]},
                    {"kind": "mlx", "class": None, "domain": [8, 16], "ops": ["matmul"]},
                    {"kind": "kernel", "class": "elementwise", "domain": [128], "ops": ["mul"]}],
        "decisions": [{"fused": True, "reason": "same domain"},
                      {"fused": False, "reason": "matmul is left to MLX"},
                      {"fused": False, "reason": "matmul is left to MLX"}]})
    text = "\n".join(report.fusion_section(str(tmp_path), ["split", "absent"]))
    assert ("| split | 5 computed nodes -> 2 fused kernel(s), 1 left to MLX | row [8, 16]: max, sub, exp; "
            "elementwise [128]: mul | matmul is left to MLX (x2) |") in text
    assert "| absent | regions.json missing |" in text
