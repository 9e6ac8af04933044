"""The benchmark harness: interleaving, bootstrap statistics, allocator conditions in a child."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from autoperfect import THREAD_BINDING, bench


def _noisy(payload):
    """A child target that prints on both Python's and C's stdout before answering."""
    print("chatter from python")
    os.write(1, b"chatter from a C library\n")
    return {"echo": payload}


def _logging_contenders(log):
    return {name: (lambda name=name: log.append(name)) for name in ("a", "b", "c")}


def test_every_contender_gets_one_sample_per_round_in_shuffled_orders():
    log = []
    samples = bench.time_interleaved(_logging_contenders(log), warmup=2, repeats=40, seed=7)
    assert {name: len(s) for name, s in samples.items()} == {"a": 40, "b": 40, "c": 40}
    assert all(t >= 0 for s in samples.values() for t in s)
    timed = log[2 * 3:]
    rounds = [tuple(timed[i:i + 3]) for i in range(0, len(timed), 3)]
    assert all(sorted(r) == ["a", "b", "c"] for r in rounds)
    assert len(set(rounds)) > 1, "the order must change between rounds"


def test_interleaving_order_is_fixed_by_the_seed():
    first, second = [], []
    bench.time_interleaved(_logging_contenders(first), warmup=0, repeats=10, seed=3)
    bench.time_interleaved(_logging_contenders(second), warmup=0, repeats=10, seed=3)
    assert first == second


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 12])
def test_round_orders_put_each_contender_after_each_other_equally_often(n):
    """A block of rounds balances what a call inherits from the one before it: every ordered pair
    of neighbours once (twice for odd n), every contender in every position as often."""
    from collections import Counter

    block = bench.balanced_block(n)
    for seed in (1, 2):
        orders = bench.round_orders(n, 2 * block, seed)
        assert len(orders) == 2 * block and all(sorted(o) == list(range(n)) for o in orders)
        for part in (orders[:block], orders[block:]):
            pairs = Counter((o[i], o[i + 1]) for o in part for i in range(n - 1))
            assert len(pairs) == n * (n - 1) and set(pairs.values()) == {block // n}
            positions = Counter((v, i) for o in part for i, v in enumerate(o))
            assert set(positions.values()) == {block // n} and len(positions) == n * n
    assert bench.round_orders(n, block, 1) == bench.round_orders(n, block, 1)
    assert bench.round_orders(n, block, 1) != bench.round_orders(n, block, 2)


def test_a_partial_block_keeps_its_rounds_whole():
    orders = bench.round_orders(6, 9, 4)
    assert len(orders) == 9 and all(sorted(o) == list(range(6)) for o in orders)
    assert bench.round_orders(6, 9, 4)[:6] == bench.round_orders(6, 6, 4)


def test_variant_rounds_cover_a_balanced_block(monkeypatch):
    from autoperfect import contenders

    seen = []
    monkeypatch.setattr(contenders.bench, "time_interleaved",
                        lambda calls, warmup, rounds, seed, burst=1: seen.append((len(calls), rounds))
                        or {name: [1.0 + i] * rounds for i, name in enumerate(calls)})
    monkeypatch.setattr(contenders, "program", lambda f, loaded: None)
    monkeypatch.setattr(contenders, "pipelined", lambda fn, args, calls: (lambda: None))

    class F:
        kernels = [type("K", (), {"name": "k"})()]
    be = type("Backend", (), {"Kernel": lambda *a: None})
    baselines = {f"b{i}": (lambda: None) for i in range(6)}
    choice = contenders.choose_variants(F(), {"k": {"v1": 1, "v2": 2, "v3": 3}}, (), be, seed=3,
                                        baselines=baselines, rounds=7)
    assert seen == [(9, 18)] and choice["k"]["rounds"] == 18  # 9 contenders: a block of 18 rounds
    assert choice["k"]["chosen"] == "v1"


def test_summarize_gives_the_median_inside_its_interval():
    samples = list(np.random.default_rng(0).normal(0.010, 0.001, size=31))
    summary = bench.summarize(samples, seed=1)
    assert summary["median_s"] == pytest.approx(float(np.median(samples)))
    lo, hi = summary["ci95_s"]
    assert lo <= summary["median_s"] <= hi
    assert summary["samples"] == 31
    assert summary["min_s"] == min(samples)
    assert bench.summarize(samples, seed=1) == summary


def test_speedup_of_a_known_2x_ratio_has_2_in_its_interval():
    rng = np.random.default_rng(5)
    kernel = rng.uniform(0.009, 0.011, size=25)
    drift = rng.uniform(0.95, 1.05, size=25)  # what a round shares hits both alike
    result = bench.speedup(list(kernel * drift), list(2 * kernel * drift), seed=2)
    assert result["median"] == pytest.approx(2.0, rel=0.05)
    lo, hi = result["ci95"]
    assert lo <= 2.0 <= hi


def test_speedup_refuses_unpaired_samples():
    with pytest.raises(ValueError, match="differ in length"):
        bench.speedup([1.0, 1.0], [2.0], seed=0)


def test_a_paired_interval_resamples_whole_rounds():
    """Two contenders whose rounds drift together by 2x, one always half the other's time: resampled
    round by round, the ratio of their medians stays 2; resampled apart, the same samples would give
    an interval a drifting machine makes wide."""
    rng = np.random.default_rng(7)
    drift = rng.uniform(1.0, 2.0, size=31)
    samples = {"kernel": list(0.002 * drift), "stream": list(0.001 * drift)}
    ratio = lambda m: {"ratio": m["kernel"] / m["stream"]}
    assert bench.paired_intervals(ratio, samples, seed=3)["ratio"] == pytest.approx([2.0, 2.0])
    shuffled = {"kernel": samples["kernel"], "stream": list(rng.permutation(samples["stream"]))}
    lo, hi = bench.paired_intervals(ratio, shuffled, seed=3)["ratio"]
    assert hi - lo > 0.3
    with pytest.raises(ValueError, match="differ in length"):
        bench.paired_intervals(ratio, {"kernel": [1.0, 1.0], "stream": [2.0]}, seed=0)


def test_stolen_share_is_the_hosts_part_of_the_cpu_time_between_two_readings(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 10 0 5 35 0 0\ncpu0 50 0 25 400 5 0 2 18 0 0\n")
    before = bench.cpu_times(str(stat))
    assert before == [100, 0, 50, 800, 10, 0, 5, 35]
    stat.write_text("cpu  160 0 70 900 10 0 5 95 0 0\n")   # 60 user, 20 system, 100 idle, 60 steal
    after = bench.cpu_times(str(stat))
    assert bench.stolen_share(before, after) == pytest.approx(60 / 240)
    assert bench.stolen_share(after, after) is None          # no time between
    assert bench.stolen_share(None, after) is None
    assert bench.cpu_times(str(tmp_path / "missing")) is None
    stat.write_text("intr 1 2 3\n")
    assert bench.cpu_times(str(stat)) is None
    if os.path.exists("/proc/stat"):
        now = bench.cpu_times()
        assert now is not None and len(now) == 8


@pytest.mark.parametrize("shares, kept, retaken, runs", [
    ([0.01], 0.01, [], 1),                       # the host took little: timed once
    ([0.2, 0.03], 0.03, [0.2], 2),               # retaken until at most the limit
    ([0.2, 0.3, 0.1, 0.0], 0.1, [0.2, 0.3], 3),  # at most twice more: the least of the three kept
    ([None], None, [], 1),                       # no /proc/stat: nothing to decide on
])
def test_rounds_the_host_took_cpu_time_from_are_timed_again(monkeypatch, shares, kept, retaken, runs):
    """least_stolen runs the work again while the host's share is above the limit, at most twice
    more, and keeps the run with the least share, whatever its result; the others' shares returned."""
    told = iter(shares)
    calls = []
    monkeypatch.setattr(bench, "stolen_during", lambda work: (work(), next(told)))
    result, share, set_aside = bench.least_stolen(lambda: calls.append(len(calls)) or len(calls), 0.05, 2)
    assert (share, set_aside, len(calls)) == (kept, retaken, runs)
    assert result == shares.index(kept) + 1  # the kept run's own result, not the last or the fastest


def test_machine_names_cpu_cores_and_versions():
    info = bench.machine()
    assert info["cores"] == os.cpu_count()
    assert info["cpu"] and info["platform"] and info["python"]
    assert info["numpy"] == np.__version__
    assert "torch" in info


def test_run_condition_round_trips_and_sets_malloc_only_when_warm(monkeypatch):
    monkeypatch.setenv("MALLOC_ARENA_MAX", "1")  # the parent's own MALLOC_* must not leak through
    payload = {"op": "chain", "sizes": [1, 2, 3]}
    warm = bench.run_condition("warm", "autoperfect.bench:probe", payload, timeout_s=60)
    default = bench.run_condition("default", "autoperfect.bench:probe", payload, timeout_s=60)
    assert warm["payload"] == payload and default["payload"] == payload
    assert warm["malloc_env"] == bench.ALLOCATOR_CONDITIONS["warm"]
    assert default["malloc_env"] == {}
    assert warm["condition"].startswith("warm allocator") and "MALLOC_MMAP_THRESHOLD_" in warm["condition"]
    assert default["condition"].startswith("default glibc allocator")
    for result in (warm, default):  # every contender of either condition: one bound thread per core
        assert result["omp_env"] == {"OMP_NUM_THREADS": str(os.cpu_count()), **THREAD_BINDING}
        assert "OMP_PROC_BIND=close" in result["condition"]


@pytest.mark.parametrize("user, expected", [({}, "close"), ({"OMP_PROC_BIND": "spread"}, "spread")])
def test_bind_threads_opt_in_keeps_the_users_settings(user, expected):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_")}
    code = "import os, autoperfect; print(os.environ.get('OMP_PROC_BIND'), os.environ.get('OMP_PLACES'))"
    out = subprocess.run([sys.executable, "-c", code], env={**env, **user, "AUTOPERFECT_BIND_THREADS": "1"},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [expected, "cores"]


def test_bind_threads_is_refused_once_openmp_has_loaded():
    code = ("import ctypes, ctypes.util, os, autoperfect\n"
            "ctypes.CDLL(ctypes.util.find_library('gomp'))\n"
            "print(autoperfect.bind_threads(), os.environ.get('OMP_PROC_BIND'))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMP_") and k != "AUTOPERFECT_BIND_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "None"]


def test_run_condition_keeps_stdout_for_the_reply():
    result = bench.run_condition("default", "tests.test_bench:_noisy", {"x": 1}, timeout_s=60)
    assert result["echo"] == {"x": 1}


def test_a_failing_child_raises_with_its_stderr():
    with pytest.raises(RuntimeError, match="no_such_function"):
        bench.run_condition("default", "autoperfect.bench:no_such_function", {}, timeout_s=60)


def test_unknown_condition_is_refused():
    with pytest.raises(ValueError, match="unknown allocator condition"):
        bench.run_condition("cold", "autoperfect.bench:probe", {}, timeout_s=60)


def test_atomic_output_keeps_the_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "plot.png"
    with bench.atomic_output(str(path)) as temporary:
        with open(temporary, "wb") as f:
            f.write(b"whole")
    with pytest.raises(OSError):
        with bench.atomic_output(str(path)) as temporary:
            with open(temporary, "wb") as f:
                f.write(b"half")
            raise OSError("disk full")
    assert path.read_bytes() == b"whole"
    assert os.listdir(tmp_path) == ["plot.png"]


def test_bursts_time_every_call_and_pair_the_rounds():
    calls = {"a": 0, "b": 0}

    def make(name, seconds):
        def call():
            calls[name] += 1
            time.sleep(seconds)
        return call
    samples = bench.time_interleaved({"a": make("a", 0.0), "b": make("b", 0.002)}, 1, 5, seed=1, burst=3)
    assert calls == {"a": 1 + 5 * 3, "b": 1 + 5 * 3}
    assert len(samples["a"]) == len(samples["b"]) == 5
    assert all(b >= 0.002 > a for a, b in zip(samples["a"], samples["b"]))


def test_pipelined_queues_the_calls_and_evaluates_them_once(monkeypatch):
    import mlx.core as mx

    from autoperfect import contenders

    made, evaluated = [], []
    monkeypatch.setattr(mx, "eval", lambda *a: evaluated.append(a))
    call = contenders.pipelined(lambda x: made.append(x) or x, (7,), 4)
    call()
    assert made == [7, 7, 7, 7]
    assert evaluated == [([7, 7, 7, 7],)]


def test_variants_are_chosen_per_call_when_pipelined(monkeypatch):
    """With `pipeline`, a variant's median is per call: a sample of `pipeline` queued calls over
    their count, so the faster variant wins and the medians stay in seconds per call."""
    from autoperfect import contenders

    cost = {"slow": 0.004, "fast": 0.001}
    queued = []

    class Kernel:
        def __init__(self, k, lib):
            self.lib = lib

    def program(f, loaded):
        return lambda: queued.append(loaded["k"].lib)

    def pipelined(fn, args, n):
        def call():
            for _ in range(n):
                fn()
            time.sleep(cost[queued[-1]] * n)
        return call

    class F:
        kernels = [type("K", (), {"name": "k"})()]
    monkeypatch.setattr(contenders, "program", program)
    monkeypatch.setattr(contenders, "pipelined", pipelined)
    be = type("Backend", (), {"Kernel": Kernel})
    choice = contenders.choose_variants(F(), {"k": {"slow": "slow", "fast": "fast"}}, (), be, seed=3,
                                        rounds=3, pipeline=5)
    assert choice["k"]["chosen"] == "fast"
    assert 0.004 <= choice["k"]["median_s"]["slow"] < 0.008
    assert 0.001 <= choice["k"]["median_s"]["fast"] < 0.004
    assert len(queued) == 5 * 2 * (2 + 3)  # every sample queued `pipeline` calls (warm-up rounds too)
    versus = choice["k"]["over_runner_up"]  # paired, in the same rounds: about 4x, and told apart
    assert versus["variant"] == "slow" and versus["ci95"][0] > 1.5 and choice["k"]["rounds"] == 3


def test_each_kernels_variants_are_timed_beside_the_others_likely_choices(monkeypatch):
    """With two kernels of several variants each, a first look (one call a variant) picks each
    kernel's likely choice, and each is then timed with the other at it (at its choice, once made),
    never at a first variant that may be far slower than what will run."""
    from autoperfect import contenders

    cost = {"a": {"a1": 3.0, "a2": 1.0, "a3": 2.0}, "b": {"b1": 9.0, "b2": 4.0, "b3": 1.0}}
    looks, contexts = [], []

    class Kernel:
        def __init__(self, k, lib):
            self.name, self.lib = k.name, lib

    def program(f, loaded):
        return dict((name, kern.lib) for name, kern in loaded.items())

    def time_interleaved(calls, warmup, rounds, seed, burst=1):
        (looks if rounds == 1 else contexts).append({v: dict(loaded) for v, loaded in calls.items()})
        return {v: [sum(cost[k][lib] for k, lib in loaded.items())] * rounds for v, loaded in calls.items()}

    class F:
        kernels = [type("K", (), {"name": n})() for n in ("a", "b")]
    monkeypatch.setattr(contenders, "program", program)
    monkeypatch.setattr(contenders, "pipelined", lambda fn, args, n: fn)
    monkeypatch.setattr(contenders.bench, "time_interleaved", time_interleaved)
    monkeypatch.setattr(contenders.bench, "speedup", lambda a, b, seed: {"median": 1.0, "ci95": [1.0, 1.0]})
    be = type("Backend", (), {"Kernel": Kernel})
    choice = contenders.choose_variants(F(), {k: {v: v for v in c} for k, c in cost.items()}, (), be, seed=3)
    assert [c["chosen"] for c in choice.values()] == ["a2", "b3"]
    # the first look at a's variants had b at its first variant, b's had a at a's fastest look
    assert {ctx["b"] for ctx in looks[0].values()} == {"b1"} and {ctx["a"] for ctx in looks[1].values()} == {"a2"}
    # the rounds that chose: each kernel beside the other's likely choice
    assert {ctx["b"] for ctx in contexts[0].values()} == {"b3"} and {ctx["a"] for ctx in contexts[1].values()} == {"a2"}


def test_screening_times_no_further_a_variant_whose_look_took_past_screen_times_the_fastest(monkeypatch):
    """With `screen` (the runtime's first call), each kernel's variants are looked at in context (the
    other kernel at its likely choice) over SCREEN_ROUNDS calls after a warm-up, and a variant whose
    faster call took more than `screen` times the fastest one's (and SCREEN_GAP_S more) is not timed
    in the rounds that choose: that call stands in median_s and it is named in screened_out. One
    variant left is chosen without further rounds; calls of microseconds, or no `screen`, time
    every variant as before."""
    from autoperfect import contenders

    cost = {"a": {"a1": 5.0, "a2": 1.0, "a3": 1.9, "a4": 3.5}, "b": {"b1": 9.0, "b2": 4.0, "b3": 1.0}}
    calls_made = []

    class Kernel:
        def __init__(self, k, lib):
            self.name, self.lib = k.name, lib

    def time_interleaved(calls, warmup, rounds, seed, burst=1):
        calls_made.append((sorted(calls), warmup, rounds))
        # each variant's second call is its fastest: a look is the faster of its calls
        return {v: [sum(cost[k][lib] for k, lib in loaded.items()) * f for f in (1.5, 1.0, 1.2)[:rounds]]
                for v, loaded in calls.items()}

    class F:
        kernels = [type("K", (), {"name": n})() for n in ("a", "b")]
    monkeypatch.setattr(contenders, "program", lambda f, loaded: {n: k.lib for n, k in loaded.items()})
    monkeypatch.setattr(contenders, "pipelined", lambda fn, args, n: fn)
    monkeypatch.setattr(contenders.bench, "time_interleaved", time_interleaved)
    monkeypatch.setattr(contenders.bench, "speedup", lambda a, b, seed: {"median": 1.0, "ci95": [1.0, 1.0]})
    be = type("Backend", (), {"Kernel": Kernel})
    variants = {k: {v: v for v in c} for k, c in cost.items()}
    choice = contenders.choose_variants(F(), variants, (), be, seed=3, rounds=3, screen=2.0)
    every_a, every_b = ["a1", "a2", "a3", "a4"], ["b1", "b2", "b3"]
    assert calls_made[:2] == [(every_a, 0, 1), (every_b, 0, 1)]  # the first looks, one call each, no warm-up
    # a beside b3 (its likely choice): a1 (6.0) and a4 (4.5) took more than twice a2's 2.0; a3 (2.9) did not
    assert calls_made[2:4] == [(every_a, 0, contenders.SCREEN_ROUNDS), (["a2", "a3"], 2, 3)]
    assert choice["a"]["chosen"] == "a2" and choice["a"]["screened_out"] == ["a1", "a4"]
    assert choice["a"]["median_s"]["a1"] == 6.0 and choice["a"]["median_s"]["a2"] == pytest.approx(2.4)
    # b beside a2: b1 (10) and b2 (5) took more than twice b3's 2: b3 is left and chosen on its look
    assert calls_made[4:] == [(every_b, 0, 2)] and choice["b"]["chosen"] == "b3" and "rounds" not in choice["b"]
    assert choice["b"]["median_s"] == {"b3": 2.0, "b1": 10.0, "b2": 5.0} and choice["b"]["screened_out"] == ["b1", "b2"]
    calls_made.clear()
    cost = {k: {v: t * 1e-4 for v, t in c.items()} for k, c in cost.items()}  # calls of microseconds
    small = contenders.choose_variants(F(), variants, (), be, seed=3, rounds=3, screen=2.0)
    assert all("screened_out" not in c and len(c["median_s"]) == len(variants[k]) for k, c in small.items())
    calls_made.clear()
    lone = contenders.choose_variants(F(), {"a": variants["a"], "b": {"b3": "b3"}}, (), be, seed=3, rounds=3,
                                      screen=2.0)
    assert calls_made[0] == (every_a, 1, 2) and len(calls_made) == 2 and lone["a"]["chosen"] == "a2"  # no first look
    calls_made.clear()
    plain = contenders.choose_variants(F(), variants, (), be, seed=3, rounds=3)
    assert calls_made == [(every_a, 1, 1), (every_b, 1, 1), (every_a, 2, 4), (every_b, 2, 6)]
    assert "screened_out" not in plain["a"] and sorted(plain["a"]["median_s"]) == every_a


def test_a_steady_burst_takes_enough_copies_of_the_inputs_to_pass_the_caches():
    """roofline.BEYOND times the caches over the bytes each call reads, rounded up; one copy when
    one call reads past that already, or where no cache is known; never more than STEADY_MAX_SETS."""
    from autoperfect import contenders, roofline

    assert roofline.BEYOND == 4
    assert contenders.steady_set_count(16 << 20, 36 << 20) == 9      # 144 MB over 16 MB
    assert contenders.steady_set_count(17 << 20, 36 << 20) == 9      # 8.5 rounded up
    assert contenders.steady_set_count(192 << 20, 36 << 20) == 1
    assert contenders.steady_set_count(16 << 20, None) == 1
    assert contenders.steady_set_count(4096, 36 << 20) == contenders.STEADY_MAX_SETS


def test_input_sets_hold_the_same_values_in_their_own_buffers_and_are_taken_in_turn():
    import mlx.core as mx

    from autoperfect import contenders
    from autoperfect.pipeline import front

    from op_table import config_specs, small_shapes

    spec = config_specs()["rmsnorm"]
    spec = spec.with_shapes(small_shapes(spec.inputs))
    sets = contenders.input_sets(spec, front(spec), 3, with_torch=False)
    first = sets[0]
    for s in sets[1:]:
        assert all(not np.shares_memory(a, b) and np.array_equal(a, b) for a, b in zip(s.xs, first.xs))
        assert all(mx.array_equal(a, b).item() and a is not b for a, b in zip(s.arrays, first.arrays))
        assert s.tensors is None
    seen = []
    call = contenders.over({"f": lambda s: seen.append(s)}, sets)["f"]
    for _ in range(7):
        call()
    assert [[t is s for t in sets].index(True) for s in seen] == [0, 1, 2, 0, 1, 2, 0]


def test_mlx_ones_are_a_view_of_an_mlx_buffer():
    """The in-round stream kernels' arrays live in MLX's memory, as the kernels' do: the view's
    buffer is exported by an MLX array, which it keeps alive."""
    import gc

    import mlx.core as mx

    from autoperfect import contenders

    view = contenders.mlx_ones(1000)
    gc.collect()
    assert isinstance(view.base.obj, mx.array) and view.dtype == np.float32
    assert view.shape == (1000,) and np.all(view == 1.0)


def test_in_cache_takes_the_fewest_rows_whose_traffic_fits_half_the_l2():
    """rmsnorm 4096x1024 moves 32 MB and a little: over 2 MB of it per 4 MB of L2 needs 32 parts,
    not 16; no L2 size, or rows that run out before the traffic fits, give none."""
    from autoperfect import contenders
    from autoperfect.spec import parse_op

    from op_table import config_specs

    spec = config_specs()["rmsnorm"]
    moved = 2 * 4096 * 1024 * 4 + 1024 * 4
    assert contenders.in_cache_divisor(spec, moved, 4 << 20) == 32
    assert contenders.in_cache_divisor(spec, 2 << 20, 4 << 20) == 1  # already fits
    assert contenders.in_cache_divisor(spec, moved, None) is None
    odd = parse_op("odd", {"fn": "def odd(x):\n    return x * 2\n",
                           "inputs": {"x": {"shape": [4095, 1024], "dtype": "float32"}}})
    assert contenders.in_cache_divisor(odd, 2 * 4095 * 1024 * 4, 4 << 20) is None


@pytest.fixture(scope="module")
def cpu_build(tmp_path_factory):
    root = tmp_path_factory.mktemp("in-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOPERFECT_CACHE", str(root))
        yield root / "build"


def _loaded(spec, source_of, where):
    from autoperfect import backends
    from autoperfect.pipeline import front

    be = backends.get("cpu")
    loaded = {}
    for k in (k for k in front(spec).kernels if k is not None):
        b = be.build(source_of(be, k), where)
        assert b.ok, b.log
        loaded[k.name] = be.Kernel(k, b.library)
    return loaded


def test_in_cache_times_the_kernels_alone_and_scales_them_to_the_op(cpu_build, monkeypatch):
    """softmax 64x1000 cut to 8 rows (an L2 of 64 KB): the kernel's median call over 8 rows, times
    8, is the op's time in cache; the cut op's traffic is an eighth of the whole's."""
    from autoperfect import contenders, roofline
    from autoperfect.pipeline import front
    from autoperfect.spec import parse_op

    spec = parse_op("softmax", {"fn": "def softmax(x):\n    return mx.softmax(x, axis=-1)\n",
                                "inputs": {"x": {"shape": [64, 1000], "dtype": "float32"}}})
    monkeypatch.setattr(roofline, "cache_bytes", lambda level=None: 64 << 10)
    got = contenders.in_cache(spec, front(spec), _loaded(spec, lambda be, k: be.render(k), cpu_build), seed=7)
    assert got["divisor"] == 16 and got["shapes"] == {"x": [4, 1000]}
    assert got["bytes_moved"] == 2 * 4 * 1000 * 4
    assert got["kernel"]["samples"] == contenders.IN_CACHE_ROUNDS
    assert got["seconds"] == pytest.approx(got["kernel"]["median_s"] * 16) and got["seconds"] > 0
    assert "half" not in got and got["fixed_included"]  # 2 rows (or 8) of 1000 run on one thread: a bound


@pytest.mark.parametrize("l2", [1 << 20, 640 << 10])
def test_in_cache_takes_out_the_fixed_cost_of_a_call_with_two_cuts_on_every_thread(cpu_build, monkeypatch, l2):
    """softmax 256x1024 timed over 64 rows and 32 (32768 elements: still on every thread) in the same
    rounds, and the op's time in cache is what the rows add, 2 * 4 * (the 64 rows' median - the
    32's), not the median call times 4: with an L2 of 1 MB the cut (64 rows) and its half; with 640
    KB, whose half (320 KB) fits 32 rows only, those 32 and the cut doubled (64 rows, 512 KB: within
    7/8 of the L2), since 16 rows would run on one thread. Where the smaller cut was no faster (the
    noise's), the calls' figure stands, a bound that says so."""
    from autoperfect import contenders, roofline
    from autoperfect.pipeline import front
    from autoperfect.spec import parse_op

    spec = parse_op("softmax", {"fn": "def softmax(x):\n    return mx.softmax(x, axis=-1)\n",
                                "inputs": {"x": {"shape": [256, 1024], "dtype": "float32"}}})
    monkeypatch.setattr(roofline, "cache_bytes", lambda level=None: l2)
    got = contenders.in_cache(spec, front(spec), _loaded(spec, lambda be, k: be.render(k), cpu_build), seed=7)
    assert got["divisor"] == 4 and got["shapes"] == {"x": [64, 1024]} and got["half"]["divisor"] == 8
    cut, half = got["kernel"]["median_s"], got["half"]["kernel"]["median_s"]
    assert got["calls_s"] == pytest.approx(cut * 4)
    assert got["per_call_s"] == pytest.approx(2 * half - cut)
    if cut > half:
        assert got["seconds"] == pytest.approx(8 * (cut - half)) and "fixed_included" not in got
    else:
        assert got["seconds"] == pytest.approx(4 * cut) and got["fixed_included"]


def test_the_in_cache_figure_is_the_median_childs():
    """Three children's replies: the one whose figure is their median counts, whole (its cut, its
    samples), with every child's figure beside it; one slow child moves nothing; replies with no
    figure leave the first as it is."""
    from autoperfect.contenders import median_child

    replies = [{"in_cache": {"seconds": s, "divisor": d}, "condition": "warm"}
               for s, d in ((0.23e-3, 1), (0.48e-3, 2), (0.25e-3, 3))]
    got = median_child(replies)
    assert got["in_cache"]["seconds"] == 0.25e-3 and got["in_cache"]["divisor"] == 3
    assert got["in_cache"]["children_s"] == [0.23e-3, 0.48e-3, 0.25e-3] and got["condition"] == "warm"
    assert median_child(replies[:2])["in_cache"]["seconds"] == 0.23e-3  # the lower of two
    skipped = [{"in_cache": {"skipped": "no L2 size in sysfs"}}] * 3
    assert median_child(skipped) == skipped[0] and median_child([{}]) == {}


def test_rows_time_is_the_slope_of_two_cuts():
    """time = fixed + per row * rows: 11.42 us over a cut of the op's rows over 32 and 7.69 us over
    half of it give 3.73 us per half cut, 2 * 32 * 3.73 us for the op, and 3.96 us a call; a half
    no faster than the whole gives no rows' time."""
    from autoperfect.contenders import rows_time

    seconds, fixed = rows_time(11.42e-6, 7.69e-6, 32)
    assert seconds == pytest.approx(2 * 32 * 3.73e-6) and fixed == pytest.approx(3.96e-6)
    assert rows_time(5e-6, 5.5e-6, 8) == (None, pytest.approx(6e-6))


def test_half_a_cut_counts_only_where_it_still_runs_on_every_thread():
    from autoperfect.contenders import _runs_threaded
    from autoperfect.spec import parse_op

    spec = parse_op("softmax", {"fn": "def softmax(x):\n    return mx.softmax(x, axis=-1)\n",
                                "inputs": {"x": {"shape": [256, 1024], "dtype": "float32"}}})
    assert _runs_threaded(spec, 8) and not _runs_threaded(spec, 16) and not _runs_threaded(spec, 512)


def test_in_cache_refuses_to_time_a_kernel_that_computes_something_else(cpu_build, monkeypatch):
    """A kernel whose output at the cut size is wrong (here: every exp made 1) is not timed."""
    from autoperfect import contenders, roofline
    from autoperfect.pipeline import front
    from autoperfect.spec import parse_op

    spec = parse_op("softmax", {"fn": "def softmax(x):\n    return mx.softmax(x, axis=-1)\n",
                                "inputs": {"x": {"shape": [64, 1000], "dtype": "float32"}}})
    monkeypatch.setattr(roofline, "cache_bytes", lambda level=None: 64 << 10)
    wrong = _loaded(spec, lambda be, k: be.render(k).replace("expf(", "1.0f + 0.0f * ("), cpu_build)
    got = contenders.in_cache(spec, front(spec), wrong, seed=7)
    assert "disagrees with the reference" in got["skipped"] and "seconds" not in got


def test_in_cache_runs_in_a_child_of_its_own_on_the_chosen_libraries(cpu_build, monkeypatch):
    """The bench stage's third child: the chosen library per kernel in, the in-cache record out,
    measured where no other thread has started an OpenMP team (contenders.measure_in_cache)."""
    from autoperfect import backends
    from autoperfect.pipeline import front
    from autoperfect.spec import parse_op

    spec = parse_op("softmax", {"fn": "def softmax(x):\n    return mx.softmax(x, axis=-1)\n",
                                "inputs": {"x": {"shape": [64, 1000], "dtype": "float32"}}})
    be = backends.get("cpu")
    chosen = {}
    for k in (k for k in front(spec).kernels if k is not None):
        b = be.build(be.render(k), cpu_build)
        assert b.ok, b.log
        chosen[k.name] = b.library
    got = bench.run_condition("warm", "autoperfect.contenders:measure_in_cache",
                              {"spec": spec.to_json(), "backend": "cpu", "chosen": chosen}, 300)
    record = got["in_cache"]
    assert record["shapes"]["x"][1] == 1000 and record["seconds"] > 0
    assert record["seconds"] == pytest.approx(record["kernel"]["median_s"] * record["divisor"])


def test_the_kernelir_baseline_runs_the_ops_kernels_as_mlx_ops_and_is_checked(monkeypatch, tmp_path):
    """`kernelir_mlx`: the op's kernels rendered by the `mlx` backend, called as our program calls
    them; a rendering that computes something else (rsqrt made sqrt) is left out, as a baseline
    that disagrees with the answer key always is, and one the backend can't render too."""
    from autoperfect import backends, contenders, interp
    from autoperfect.backends.cfamily import Unsupported
    from autoperfect.pipeline import front

    from op_table import config_specs, small_shapes

    monkeypatch.setenv("AUTOPERFECT_CACHE", str(tmp_path))
    spec = config_specs()["rmsnorm"]
    spec = spec.with_shapes(small_shapes(spec.inputs))
    f = front(spec)
    (first,) = contenders.input_sets(spec, f, 1, with_torch=False)
    ref = interp.evaluate(f.traced, list(first.xs), "float64")
    checks = {}
    calls = contenders.kernelir_mlx(f, ref, checks, first)
    assert checks == {"kernelir_mlx": True} and set(calls) == {"kernelir_mlx"}
    np.testing.assert_allclose(contenders.mlx_values(calls["kernelir_mlx"](first))[0], ref[0], rtol=1e-5, atol=1e-6)

    be = backends.get("mlx")
    render = be.render
    monkeypatch.setattr(be, "render", lambda k, s: render(k, s).replace("mx.rsqrt(", "mx.sqrt("))
    checks = {}
    assert contenders.kernelir_mlx(f, ref, checks, first) == {} and checks == {"kernelir_mlx": False}

    def unsupported(k, s):
        raise Unsupported("no MLX rendering")
    monkeypatch.setattr(be, "render", unsupported)
    checks = {}
    assert contenders.kernelir_mlx(f, ref, checks, first) == {} and checks == {"kernelir_mlx": False}
