"""The cost model: traffic, work, passes and peak live bytes from shapes; the footprint caps; the
roofline's bound from traffic and work."""

from __future__ import annotations

import mlx.core as mx
import pytest

from autoperfect import cost, fuse, roofline
from autoperfect.canon import canonicalize
from autoperfect.kernel_ir import lower
from autoperfect.trace import trace


def partition(fn, shapes):
    return fuse.fuse(canonicalize(trace(fn, [(f"a{i}", s, "float32") for i, s in enumerate(shapes)], "f")))


def test_layernorm_costs_three_passes_and_saves_its_intermediates():
    p = partition(lambda x: (x - mx.mean(x, -1, keepdims=True)) * mx.rsqrt(mx.var(x, -1, keepdims=True) + 1e-5),
                  [(64, 128)])
    (c,) = [cost.region_cost(p, r) for r in p.regions]
    assert c.bytes == 2 * 64 * 128 * 4                   # x read once, the result written once
    assert c.passes == 3                                 # mean, then variance, then the output
    assert c.saved_bytes > c.bytes and c.launches_saved > 5
    assert 0 < c.intensity < 1


@pytest.mark.parametrize("axis", [-1, 0])
def test_a_lone_sum_is_one_pass_that_adds_every_element(axis):
    p = partition(lambda x: mx.sum(x, axis=axis), [(64, 128)])
    (c,) = [cost.region_cost(p, r) for r in p.regions]
    assert c.passes == 1
    assert c.flops == 64 * 128
    assert cost.kernel_work(kernels(lambda x: mx.sum(x, axis=axis), [(64, 128)]))["flops"] == 64 * 128


def test_transcendentals_weigh_more_than_adds():
    chain = cost.region_cost(*(lambda p: (p, p.regions[0]))(partition(lambda x: x + 1.0, [(1000,)])))
    exps = cost.region_cost(*(lambda p: (p, p.regions[0]))(partition(lambda x: mx.exp(x), [(1000,)])))
    assert exps.flops == cost.TRANSCENDENTAL_FLOPS * chain.flops


def test_peak_live_bytes_frees_what_no_later_region_reads():
    # region 1 (x*2 -> sum over axis 0 reads it back) keeps x and one (32, 32) temporary alive at most
    p = partition(lambda x: mx.exp(x) * mx.sum(mx.exp(x), axis=0), [(32, 32)])
    size = 32 * 32 * 4
    assert size * 2 <= cost.peak_live_bytes(p) <= size * 3 + 32 * 4


def kernels(fn, shapes):
    p = partition(fn, shapes)
    return [lower(p, r) for r in p.regions if r.kind == "kernel"]


def test_work_counts_each_function_once_per_element_and_row_math_once_per_row():
    """softmax's exp runs in two passes without a stash, but the ideal work is one exp per element;
    rsqrt of a row statistic is one per row."""
    soft = cost.kernel_work(kernels(lambda x: mx.softmax(x, axis=-1), [(6, 300)]))
    assert soft["functions"] == {"exp": 6 * 300}
    rms = cost.kernel_work(kernels(lambda x: x * mx.rsqrt(mx.mean(x * x, -1, keepdims=True) + 1e-6), [(6, 300)]))
    assert rms["functions"] == {"rsqrt": 6}
    assert rms["flops"] >= 2 * 6 * 300   # a square and a multiply per element at least


def test_the_roofline_binds_on_the_slower_of_traffic_and_work():
    roof = {"bandwidth_gbps": 50.0, "fma_gflops": 500.0,
            "functions": {"rates": {"exp": {"per_second": 1e9, "schedule": "s"}}}}
    work = {"functions": {"exp": 10 ** 6}, "flops": 0}
    slow = roofline.bound(8 * 10 ** 6, work, roof)            # 160 us of traffic, 1 ms of exps
    assert slow["bound"] == "compute (exp)" and slow["seconds"] == pytest.approx(1e-3)
    fast = roofline.bound(8 * 10 ** 6, {"functions": {}, "flops": 10 ** 6}, roof)
    assert fast["bound"] == "memory" and fast["seconds"] == pytest.approx(8e6 / 50e9)
    unmeasured = roofline.bound(8, {"functions": {"erf": 5}, "flops": 0}, roof)
    assert unmeasured["unmeasured"] == ["erf"] and unmeasured["bound"] == "memory"


def test_footprint_cap_splits_a_huge_chain():
    def long_chain(x):
        for _ in range(fuse.MAX_NODES + 10):
            x = x * 1.0001 + 0.5
        return x
    p = partition(long_chain, [(8,)])
    assert len(p.regions) >= 2
    assert any("footprint cap" in d.reason for d in p.decisions if not d.fused)
