"""The metal backend, on a machine without Metal: every kernel renders exactly when the C renderer
does; sources compile as C++ against the Metal shim inside the kernel function MLX writes; Metal's
missing functions (expm1, log1p, erf) are within their ulp bounds; the kernel bodies, run on the
CPU by the SIMT emulator with Metal's dispatch (exactly the grid's threads), pass the judge."""

from __future__ import annotations

import ctypes
import math
import subprocess

import numpy as np
import pytest

from autoperfect import backends
from autoperfect.backends import cfamily, cpu, metal
from autoperfect.ops import ULP_BOUND, Op

from test_cuda import SPECS, all_table_kernels, emulated_verdicts, kernels, small, workdir  # noqa: F401

NO_CXX = "no C++ compiler: Metal sources can't be checked here"


def test_every_kernel_renders_exactly_when_the_cpu_does():
    for k in all_table_kernels():
        try:
            cpu.render(k)
            refused = False
        except cfamily.Unsupported:
            refused = True
        for s in metal.schedules_for(k):
            if refused:
                with pytest.raises(cfamily.Unsupported):
                    metal.render(k, s)
            else:
                body = metal.MetalRenderer.parse(metal.render(k, s))[2]
                assert "threadIdx" not in body and "__" not in body


def test_metal_divides_with_precise_divide():
    """Metal's `/` is not correctly rounded: every division in its op table is precise::divide."""
    for op, text in {**metal.MetalRenderer.unary, **metal.MetalRenderer.binary}.items():
        assert "/" not in text.replace("metal::precise::divide", ""), op


@pytest.mark.skipif(metal.cxx() is None, reason=NO_CXX)
def test_every_config_candidate_passes_the_static_check(tmp_path):
    for spec in SPECS.values():
        for k in kernels(spec):
            for s in metal.schedules_for(k):
                b = metal.build(metal.render(k, s), tmp_path)
                assert b.ok, f"{spec.name} {s.name}:\n{b.log[-2000:]}"


@pytest.mark.skipif(metal.cxx() is None, reason=NO_CXX)
def test_the_static_check_catches_a_wrong_name(tmp_path):
    source = metal.render(kernels(SPECS["softmax"])[0])
    source = source.replace("metal::precise::exp(", "metal::precise::expf(")
    b = metal.build(source, tmp_path)
    assert not b.ok and "expf" in b.log


def test_the_kernel_function_is_mlx_s():
    source = metal.render(kernels(SPECS["rmsnorm"])[0])
    unit = metal.translation_unit(source)
    assert "template <int D0, int D1, int S0_0, int S0_1, int S1_0, int S1_1>" in unit
    assert "const device float* in0, const device float* in1, device float* out2" in unit
    assert "uint3 thread_position_in_threadgroup, uint3 threadgroup_position_in_grid)" in unit
    assert "#pragma METAL fp contract(off)" in unit


@pytest.mark.parametrize("value", [0.5, 1e-6, -3.25, 0.7978845608028654, 1e30, 2.0 ** -140, -0.0, 3.0])
def test_decimal_literals_round_trip(value):
    renderer = metal.MetalRenderer(kernels(SPECS["chain"])[0])
    text = renderer.literal(float(np.float32(value)))
    assert np.float32(float(text.rstrip("f"))) == np.float32(value) and text.endswith("f")
    assert math.copysign(1, float(text.rstrip("f"))) == math.copysign(1, value)


def test_without_metal_the_backend_is_not_available():
    assert ("metal" in backends.available()) == metal.available()
    assert metal.missing_device() == ("" if metal.available() else
                                      "MLX sees no Metal GPU (mx.metal.is_available() is False)")


# -- Metal's missing functions, with glibc's float exp and log standing in for Metal's precise ones ---

HARNESS = """
extern "C" void ap_eval(int which, const float* x, float* y, long n) {
  for (long i = 0; i < n; i++)
    y[i] = which == 0 ? ap_expm1(x[i]) : which == 1 ? ap_log1p(x[i]) : ap_erf(x[i]);
}
"""
FUNCTIONS = {Op.EXPM1: (0, np.expm1, (-20.0, 88.0)), Op.LOG1P: (1, np.log1p, (-0.999, 1e30)),
             Op.ERF: (2, np.frompyfunc(math.erf, 1, 1), (-5.0, 5.0))}


@pytest.fixture(scope="module")
def helpers(tmp_path_factory):
    if metal.cxx() is None:
        pytest.skip(NO_CXX)
    d = tmp_path_factory.mktemp("metal")
    (d / "h.cpp").write_text(metal.SHIM_TYPES + metal.SHIM_SIMD + metal.PRELUDE + HARNESS)
    subprocess.run([metal.cxx(), "-std=c++17", "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-w",
                    "-o", str(d / "h.so"), str(d / "h.cpp")], check=True)
    lib = ctypes.CDLL(str(d / "h.so"))
    lib.ap_eval.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
    return lib


def ulps(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    e = np.floor(np.log2(np.maximum(np.abs(ref), 2.0 ** -126)))
    return np.abs(got.astype(np.float64) - ref) / 2.0 ** (e - 23)


@pytest.mark.parametrize("op", list(FUNCTIONS), ids=lambda op: op.value)
def test_metal_helpers_are_within_their_ulp_bound(op, helpers):
    which, reference, (lo, hi) = FUNCTIONS[op]
    rng = np.random.default_rng(7)
    x = np.concatenate([np.linspace(lo, hi, 200001), rng.uniform(lo, hi, 100000),
                        np.geomspace(1e-30, min(hi, 1e4), 20000), -np.geomspace(1e-30, min(-lo, 1e4), 20000),
                        [0.0, -0.0, 1e-45]]).astype(np.float32)
    x = x[(x >= lo) & (x <= hi)]
    y = np.empty_like(x)
    helpers.ap_eval(which, x.ctypes.data, y.ctypes.data, len(x))
    ref = reference(x.astype(np.float64)).astype(np.float64)
    err = ulps(y, ref)
    worst = int(np.argmax(err))
    assert err[worst] <= ULP_BOUND[op], f"{op.value}({x[worst]!r}) = {y[worst]!r}, want {ref[worst]!r}"


@pytest.mark.parametrize("special", [np.nan, np.inf, -np.inf])
def test_metal_helpers_at_special_values(special, helpers):
    x = np.array([special], np.float32)
    got = []
    for which in range(3):
        y = np.empty(1, np.float32)
        helpers.ap_eval(which, x.ctypes.data, y.ctypes.data, 1)
        got.append(float(y[0]))
    want = [float(np.expm1(special)), float(np.log1p(special)) if special != -np.inf else math.nan,
            math.copysign(1.0, special) if special == special else math.nan]
    assert np.array_equal(np.array(got), np.array(want), equal_nan=True)


# -- the kernels' semantics, on the CPU ------------------------------------------------------------


@pytest.mark.parametrize("name", list(SPECS))
def test_emulated_kernels_pass_the_judge(name, workdir):  # noqa: F811 (the fixture)
    for verdict in emulated_verdicts(small(name), lambda k: metal.schedules_for(k)[0], "metal", workdir):
        assert verdict["passed"], verdict["reason"]


def test_emulated_simd_group_rows_pass_the_judge(workdir):  # noqa: F811
    spec = SPECS["layernorm"].with_shapes({"x": (9, 200), "w": (200,), "b": (200,)})
    for verdict in emulated_verdicts(spec, lambda k: metal.schedules_for(k)[0], "metal", workdir):
        assert verdict["passed"], verdict["reason"]
