"""The roofline: emitted kernels compile, measure positive ceilings, and fraction() agrees."""

import json
import os

import numpy as np
import pytest

from autoperfect import roofline
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
    assert roofline.streaming_source().count("#pragma omp for schedule(static)") == 2
    assert "#define CHAINS 16" in roofline.fma_source()


def test_build_compiles_once_per_source(cache_dir):
    first = roofline.build(roofline.copy_source(), cache_dir)
    stamp = os.stat(first).st_mtime_ns
    assert roofline.build(roofline.copy_source(), cache_dir) == first
    assert os.stat(first).st_mtime_ns == stamp


def test_quick_measure_returns_positive_ceilings(measured):
    kinds = ("copy_gbps", "triad_gbps", "copy_nt_gbps", "triad_nt_gbps")
    for key in (*kinds, "bandwidth_gbps", "fma_gflops"):
        assert measured[key] > 0
    assert measured["bandwidth_gbps"] == max(measured[k] for k in kinds)
    assert set(measured["functions"]["rates"]) == {op.value for op in ULP_BOUND}
    assert all(r["per_second"] > 0 for r in measured["functions"]["rates"].values())
    assert measured["sizes"] == [16 << 20]
    assert measured["threads"] >= 1
    assert measured["flags"] == roofline.FLAGS
    assert measured["compiler"] and measured["machine"]["cores"] == os.cpu_count()


def test_fraction_is_achieved_over_measured_bandwidth(measured):
    bytes_moved = 3 * 4 * (1 << 24)
    at_ceiling = bytes_moved / (measured["bandwidth_gbps"] * 1e9)
    assert roofline.fraction(bytes_moved, at_ceiling, measured) == pytest.approx(1.0)
    assert roofline.fraction(bytes_moved, 2 * at_ceiling, measured) == pytest.approx(0.5)


def test_main_writes_sorted_json(tmp_path, cache_dir):
    out = tmp_path / "roofline.json"
    roofline.main([str(out), "--quick", "--cache-dir", cache_dir])
    text = out.read_text()
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, indent=2) + "\n"
    assert data["bandwidth_gbps"] > 0


def test_stream_calls_move_the_ops_bytes_and_run(cache_dir):
    """Sized to an op's ideal traffic: copy over bytes/8 elements, triad over bytes/12 (whole
    elements), and each call really runs its kernel (the output array holds the result)."""
    kernels = roofline.load_kernels(cache_dir)
    calls = roofline.stream_calls(kernels, 3 * 4 * 1000 + 5)
    assert set(calls) == set(roofline.BYTES_PER_ELEMENT)
    assert calls["copy"][1] == 8 * ((3 * 4 * 1000 + 5) // 8)
    assert calls["triad_nt"][1] == 12 * 1000
    for name, (call, _) in calls.items():
        a, b, *c = call.buffers   # copy has no third array
        a[:], b[:] = 7.0, 2.0
        for extra in c:
            extra[:] = 5.0
        call()
        if name.startswith("copy"):   # stream_copy(src, dst, n)
            assert np.all(b == 7.0), name
        else:                         # stream_triad(dst, b, c, s, n): dst = b + s c
            assert np.all(a == 2.0 + 3.0 * 5.0), name
