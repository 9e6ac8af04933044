"""The roofline: emitted kernels compile, measure positive ceilings, and fraction() agrees."""

import json
import mmap
import os

import numpy as np
import pytest

from autoperfect import bench, roofline
from autoperfect.ops import ULP_BOUND


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("roofline-cache"))


@pytest.fixture(scope="module")
def measured(cache_dir):
    return roofline.measure(quick=True, cache_dir=cache_dir)


def test_emitted_kernels_are_parallel_loops():
    for source in (roofline.copy_source(), roofline.triad_source()):
        assert "#pragma omp parallel for" in source
    assert "#pragma omp for schedule(static)" in roofline.read_source()
    assert roofline.streaming_source().count("#pragma omp for schedule(static)") == 2
    assert "#define CHAINS 16" in roofline.fma_source()


def test_build_compiles_once_per_source(cache_dir):
    first = roofline.build(roofline.copy_source(), cache_dir)
    stamp = os.stat(first).st_mtime_ns
    assert roofline.build(roofline.copy_source(), cache_dir) == first
    assert os.stat(first).st_mtime_ns == stamp


def test_quick_measure_returns_positive_ceilings(measured):
    kinds = ("copy_gbps", "triad_gbps", "copy_nt_gbps", "triad_nt_gbps")
    for key in (*kinds, "read_gbps", "bandwidth_gbps", "fma_gflops"):
        assert measured[key] > 0
    assert measured["bandwidth_gbps"] == max(measured[k] for k in kinds)  # the read kernel is not stream bandwidth
    # one size on each kind of page; the best of them is the ceiling, and says where it was reached
    by_size = measured["by_size"]
    assert [(s["elements"], s["pages"]) for s in by_size] == [(16 << 20, p) for p in roofline.page_kinds()]
    assert measured["bandwidth_gbps"] == max(roofline.stream_gbps(s) for s in by_size)
    assert measured["pages"] == max(by_size, key=roofline.stream_gbps)["pages"]
    # the median moment's stream bandwidth, from the same samples: never above the best's
    assert measured["median_bandwidth_gbps"] == max(s["median_gbps"][k] for s in by_size for k in kinds)
    assert all(0 < s["median_gbps"][k] <= s[k] for s in by_size for k in (*kinds, "read_gbps"))
    assert all(s["huge_pages"] is None or 0 <= s["huge_pages"] <= 1 for s in by_size)
    assert set(measured["functions"]["rates"]) == {op.value for op in ULP_BOUND}
    assert all(r["per_second"] > 0 for r in measured["functions"]["rates"].values())
    assert measured["sizes"] == [16 << 20]
    # the host's share of the CPU time while the streams ran, where Linux counts it
    assert measured["host_steal"] is None or 0 <= measured["host_steal"] <= 1
    assert (measured["host_steal"] is None) == (bench.cpu_times() is None)
    # streams measured again for the host's steal leave their shares, each above the limit
    assert all(bench.STEAL_RETAKE < r <= 1 for r in measured.get("host_steal_retaken", []))
    assert measured["threads"] >= 1
    assert measured["flags"] == roofline.FLAGS
    assert measured["compiler"] and measured["machine"]["cores"] == os.cpu_count()


def test_fraction_is_achieved_over_measured_bandwidth(measured):
    bytes_moved = 3 * 4 * (1 << 24)
    at_ceiling = bytes_moved / (measured["bandwidth_gbps"] * 1e9)
    assert roofline.fraction(bytes_moved, at_ceiling, measured) == pytest.approx(1.0)
    assert roofline.fraction(bytes_moved, 2 * at_ceiling, measured) == pytest.approx(0.5)


def test_mixed_ceiling_spans_the_read_and_copy_kernels():
    """All reads: the read kernel's figure; a copy's mix: the best copy's; a triad's mix in between;
    no read figure (an older roofline.json): the stream bandwidth."""
    figures = {"read_gbps": 30.0, "copy_gbps": 35.0, "copy_nt_gbps": 50.0, "triad_gbps": 34.0,
               "triad_nt_gbps": 45.0}
    assert roofline.mixed_gbps(1000, 0, figures) == pytest.approx(30.0)
    assert roofline.mixed_gbps(1000, 1000, figures) == pytest.approx(50.0)
    # triad: 2 bytes read per byte written; 3 / (2/30 + (2/50 - 1/30))
    assert roofline.mixed_gbps(2000, 1000, figures) == pytest.approx(3 / (2 / 30 + 2 / 50 - 1 / 30))
    assert 30.0 < roofline.mixed_gbps(2000, 1000, figures) < 50.0
    assert roofline.mixed_gbps(1000, 0, {k: v for k, v in figures.items() if k != "read_gbps"}) == 50.0
    # a read kernel slower than half the copy: writes cost nothing extra, never a negative cost
    assert roofline.mixed_gbps(1000, 1000, {**figures, "read_gbps": 20.0}) == pytest.approx(40.0)


def test_the_in_round_record_gives_the_ops_shares_with_their_intervals():
    """contenders.in_rounds_record: each stream kernel's GB/s from its median, the best copy or triad
    and the op's mix's ceiling from them, and, from the rounds' samples, 95% intervals of the op's
    share of each that hold the median's share; rounds that drift together leave the share alone."""
    from autoperfect.contenders import in_rounds_record

    read = written = 4 << 20
    rate = {"copy": 35.0, "copy_nt": 50.0, "triad": 34.0, "triad_nt": 45.0, "read": 30.0}   # GB/s
    moved = {name: (4 if name == "read" else 8 if "copy" in name else 12) << 20 for name in rate}
    drift = np.random.default_rng(11).uniform(1.0, 1.6, size=21)
    samples = {name: list(moved[name] / (rate[name] * 1e9) * drift) for name in rate}
    samples["kernel"] = list((read + written) / (40e9) * drift)   # 40 GB/s: 80% of the copy's 50
    medians = {name: {"median_s": float(np.median(samples[name])), "bytes": moved[name]} for name in rate}
    record = in_rounds_record(medians, read, written, samples, seed=4)
    assert record["kernels"]["copy_nt"]["gbps"] == pytest.approx(50.0 / np.median(drift))
    assert record["gbps"] == pytest.approx(50.0 / np.median(drift))
    assert record["mixed_gbps"] == pytest.approx(roofline.mixed_gbps(read, written, {
        f"{name}_gbps": rate[name] / np.median(drift) for name in rate}))
    assert record["shares_ci95"]["gbps"] == pytest.approx([0.8, 0.8])
    lo, hi = record["shares_ci95"]["mixed_gbps"]
    assert lo == pytest.approx(hi) == pytest.approx(40.0 / roofline.mixed_gbps(read, written, {
        f"{name}_gbps": rate[name] for name in rate}))
    assert "shares_ci95" not in in_rounds_record(medians, read, written)
    assert "native" not in record["shares_ci95"]    # no one-element op timed: no native call's least
    # with the one-element MLX op's samples: the least a native call can take there over the op's time
    from autoperfect.contenders import DISPATCH_FLOOR

    record = in_rounds_record(medians, read, written, {**samples, DISPATCH_FLOOR: list(1e-4 * drift)}, seed=4)
    mixed = roofline.mixed_gbps(read, written, {f"{name}_gbps": rate[name] for name in rate})
    lo, hi = record["shares_ci95"]["native"]
    assert lo == pytest.approx(hi) == pytest.approx(((read + written) / (mixed * 1e9) + 1e-4) / ((read + written) / 40e9))
    assert record["shares_ci95"]["gbps"] == pytest.approx([0.8, 0.8])    # the other two as they were


def test_bound_holds_a_reduction_to_the_read_ceiling(measured):
    work = {"flops": 0, "functions": {}}
    mostly_read = roofline.bound(4 << 20, work, measured, read_bytes=(4 << 20) - 8)
    assert mostly_read["memory_gbps"] == pytest.approx(roofline.mixed_gbps((4 << 20) - 8, 8, measured))
    assert roofline.bound(4 << 20, work, measured)["memory_gbps"] == measured["bandwidth_gbps"]


def test_main_writes_sorted_json(tmp_path, cache_dir):
    out = tmp_path / "roofline.json"
    roofline.main([str(out), "--quick", "--cache-dir", cache_dir])
    text = out.read_text()
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, indent=2) + "\n"
    assert data["bandwidth_gbps"] > 0


def test_stream_calls_move_the_ops_bytes_and_run(cache_dir):
    """Sized to an op's ideal traffic: copy over bytes/8 elements, triad over bytes/12, read over
    bytes/4 (whole elements), and each call really runs its kernel (the output array holds the
    result; the read kernel returns the sum of what it read)."""
    kernels = roofline.load_kernels(cache_dir)
    calls = roofline.stream_calls(kernels, 3 * 4 * 1000 + 5)
    assert set(calls) == set(roofline.BYTES_PER_ELEMENT)
    assert calls["copy"][1] == 8 * ((3 * 4 * 1000 + 5) // 8)
    assert calls["triad_nt"][1] == 12 * 1000
    assert calls["read"][1] == 4 * 3001
    for name, (call, _) in calls.items():
        if name == "read":        # stream_read(a, n): the sum of a, tail included
            (a,) = call.buffers
            a[:] = np.arange(a.size, dtype=np.float32)
            assert call() == a.size * (a.size - 1) / 2
            continue
        a, b, *c = call.buffers   # copy has no third array
        a[:], b[:] = 7.0, 2.0
        for extra in c:
            extra[:] = 5.0
        call()
        if name.startswith("copy"):   # stream_copy(src, dst, n)
            assert np.all(b == 7.0), name
        else:                         # stream_triad(dst, b, c, s, n): dst = b + s c
            assert np.all(a == 2.0 + 3.0 * 5.0), name


def test_stream_calls_over_spans_take_their_slices_in_turn(cache_dir):
    """With spans, a kernel's arrays hold that many slices of the op's bytes and its calls take
    them one after the other, round and round: the k-th call of a copy writes slice k only."""
    kernels = roofline.load_kernels(cache_dir)
    call, moved = roofline.stream_calls(kernels, 8 * 1000, spans=3)["copy"]
    src, dst = call.buffers
    assert moved == 8 * 1000 and src.size == dst.size == 3 * 1000
    src[:] = np.arange(src.size, dtype=np.float32)
    dst[:] = -1.0
    for k in range(3):
        call()
        assert np.array_equal(dst[:(k + 1) * 1000], src[:(k + 1) * 1000]), k
        assert np.all(dst[(k + 1) * 1000:] == -1.0), k
    dst[:] = -1.0
    call()                       # the fourth call is the first slice's again
    assert np.array_equal(dst[:1000], src[:1000]) and np.all(dst[1000:] == -1.0)


def test_stream_calls_take_their_arrays_from_ones(cache_dir):
    """`ones` makes every array (the benchmark passes MLX's buffers): each kernel's slices come
    from what it made, copy and its streaming twin sharing theirs."""
    made = []

    def ones(n):
        made.append(np.full(n, 1.0, dtype=np.float32))
        return made[-1]

    calls = roofline.stream_calls(roofline.load_kernels(cache_dir), 8000, 2, ones)
    assert sorted(a.size for a in made) == [1332] * 3 + [2000] * 2 + [4000]   # triad, copy, read
    for call, _ in calls.values():
        assert all(any(b is a for a in made) for b in call.buffers)
    assert calls["copy"][0].buffers is calls["copy_nt"][0].buffers


def _fake_cpu(root, cpu: int, caches: list[tuple[int, str, str, str]]) -> None:
    """sysfs's cache entries for one CPU: (level, type, size, shared_cpu_list) per index."""
    for index, (level, kind, size, shared) in enumerate(caches):
        d = root / f"cpu{cpu}" / "cache" / f"index{index}"
        d.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
            (d / name).write_text(f"{value}\n")


def test_cache_bytes_counts_each_data_cache_once_by_the_cpus_sharing_it(tmp_path):
    """Two CPUs with private L1d, L1i and L2 and one shared L3 (this machine's layout): the L3 is
    counted once, the instruction caches not at all."""
    for cpu in (0, 1):
        _fake_cpu(tmp_path, cpu, [(1, "Data", "48K", str(cpu)), (1, "Instruction", "64K", str(cpu)),
                                  (2, "Unified", "2048K", str(cpu)), (3, "Unified", "491520K", "0-1")])
    (tmp_path / "cpufreq").mkdir()  # not a cpu
    assert roofline.cache_bytes(str(tmp_path)) == 2 * (48 << 10) + 2 * (2 << 20) + (480 << 20)
    assert roofline.cache_bytes(str(tmp_path / "missing")) is None
    assert roofline.cache_bytes(str(tmp_path), level="2") == 2 * (2 << 20)  # one level: both L2s
    assert roofline.cache_bytes(str(tmp_path), level="4") is None


def test_stream_arrays_are_sized_beyond_the_caches_within_the_free_memory():
    mib = 1 << 20
    # 480 MB of cache: a copy's two arrays hold 4x that at the smaller size, twice that at the other
    small, large = roofline.stream_sizes(480 * mib, 64 << 30)
    assert 2 * 4 * small >= roofline.BEYOND * 480 * mib and large == 2 * small and small % mib == 0
    # a small cache still gets arrays of MIN_ELEMENTS; no cache reported: the same
    assert roofline.stream_sizes(8 * mib, 64 << 30) == (roofline.MIN_ELEMENTS, 2 * roofline.MIN_ELEMENTS)
    assert roofline.stream_sizes(None, None) == (roofline.MIN_ELEMENTS, 2 * roofline.MIN_ELEMENTS)
    # short of memory: a triad's three arrays stay under 3/8 of what is free
    assert roofline.stream_sizes(480 * mib, 8 << 30) == (240 * mib, 256 * mib)
    capped = roofline.stream_sizes(480 * mib, 4 << 30)
    assert capped == (128 * mib,) and 3 * 4 * capped[-1] <= 3 * (4 << 30) // 8


def test_page_kinds_follow_the_systems_transparent_huge_pages(tmp_path):
    mode = tmp_path / "enabled"
    offered = ("huge", "base") if hasattr(mmap, "MADV_HUGEPAGE") else ("default",)
    for text, kinds in (("always [madvise] never", offered), ("[always] madvise never", offered),
                        ("always madvise [never]", ("default",))):
        mode.write_text(text + "\n")
        assert roofline.page_kinds(str(mode)) == kinds, text
    assert roofline.page_kinds(str(tmp_path / "missing")) == ("default",)  # no THP (macOS, old kernels)


def test_paged_ones_start_on_a_huge_page_and_base_pages_stay_small():
    for kind in {"default", *roofline.page_kinds()}:
        a = roofline.paged_ones(3 << 19, kind)
        assert a.ctypes.data % roofline.HUGE_PAGE == 0 and a.flags.writeable and a.dtype == np.float32
        assert a.size == 3 << 19 and np.all(a == 1.0), kind
        share = roofline.huge_share(a)
        assert share is None or 0 <= share <= 1
        if kind == "base" and share is not None:
            assert share == 0.0  # MADV_NOHUGEPAGE: 4 KB pages whatever the mode


def test_huge_share_reads_the_arrays_mapping_in_smaps(tmp_path):
    a = np.ones(1 << 20, dtype=np.float32)  # 4 MiB
    start = a.ctypes.data - 4096
    smaps = tmp_path / "smaps"
    smaps.write_text(
        "00400000-00401000 r-xp 00000000 08:01 1 /bin/true\nSize: 4 kB\nAnonHugePages: 0 kB\n"
        f"{start:x}-{start + (8 << 20):x} rw-p 00000000 00:00 0\nSize: 8196 kB\nAnonHugePages:   2048 kB\n"
        "VmFlags: rd wr mr mw me ac\n")
    assert roofline.huge_share(a, str(smaps)) == 0.5
    smaps.write_text("00400000-00401000 r-xp 00000000 08:01 1 /bin/true\nAnonHugePages: 0 kB\n")
    assert roofline.huge_share(a, str(smaps)) is None  # not mapped there
    assert roofline.huge_share(a, str(tmp_path / "missing")) is None
