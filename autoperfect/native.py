"""Native dispatch: generated CPU kernels as real MLX ops, through one generic C++ extension.

`native/kernel_op.cpp` defines one MLX primitive that calls a kernel by address with the KernelIR
ABI; its outputs come from MLX's allocator and its work is queued on the CPU stream like MLX's own
ops, so a kernel call is lazy, composes with other MLX ops and runs inside `mx.compile`. One
extension serves every kernel, so it is built once per machine and MLX version (about 15-50 s),
against the mlx that is installed: an extension built in an isolated build environment against
another mlx release would load and then fail, the C++ ABI being unversioned.

The build is explicit (`python -m autoperfect.native build`, which the README's install command
runs) and cached under `$AUTOPERFECT_CACHE/native/<key>`, the key covering the sources, the mlx
and nanobind versions and the Python ABI; kernels fall back to the ctypes path until it exists.
`AUTOPERFECT_NATIVE=0` turns native dispatch off (to compare the two paths, or to rule it out).

Where MLX's CUDA build sees a GPU, the same command also builds `native/cuda/kernel_op.cpp`
(`CUDA`): one primitive that launches the CUDA backend's nvcc instances as nodes of the stream's
CUDA graph, instead of MLX's `precompiled_cuda_kernel`, whose host cost at every call it avoids.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import warnings
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Iterator, NamedTuple, Sequence

from . import run

SOURCE_DIR = Path(__file__).resolve().parent.parent / "native"
SOURCES = ("CMakeLists.txt", "kernel_op.cpp", "common.h", "common.cmake")
MODULE = "_kernel_op"


class Extension(NamedTuple):
    """One extension: its module, its sources' folder under SOURCE_DIR and those sources, what it
    serves, and how its kernels run without it."""
    module: str
    folder: str
    sources: tuple[str, ...]
    serves: str
    fallback: str


CPU = Extension(MODULE, "", SOURCES, "native dispatch", "ctypes")
# MLX's CUDA build only: generated CUDA kernels' nvcc instances as MLX ops (native/cuda/kernel_op.cpp)
CUDA = Extension("_cuda_kernel_op", "cuda", ("CMakeLists.txt", "kernel_op.cpp", "shim/fmt/format.h", "../common.h",
                  "../common.cmake"),
                 "CUDA kernel dispatch", "mx.fast.precompiled_cuda_kernel")
DISABLE = "AUTOPERFECT_NATIVE"   # "0": never use the extension
LOG_TAIL_CHARS = 4000

_loaded: dict[tuple[Path | None, Extension], ModuleType | None] = {}  # None: built, did not load


class NativeBuildError(RuntimeError):
    """The extension could not be built; the message says which step failed and why."""


def cache_root() -> Path:
    from .backends.cpu import default_cache_dir  # a sibling of the kernels' build cache

    return default_cache_dir().parent / "native"


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        raise NativeBuildError(f"{package} is not installed (pip install -e . installs it)") from None


@lru_cache(maxsize=None)
def build_key(ext: Extension = CPU) -> str:
    """What the built extension depends on: its sources, the mlx and nanobind it was built with,
    and the Python ABI it was built for. Computed once per process."""
    where = SOURCE_DIR / ext.folder
    if not where.is_dir():
        raise NativeBuildError(f"the extension's sources are not at {where}: install from a "
                               "checkout (pip install -e .)")
    digest = hashlib.sha256()
    for name in ext.sources:
        digest.update(name.encode() + b"\0" + (where / name).read_bytes() + b"\0")
    for part in (_version("mlx"), _version("nanobind"), sysconfig.get_config_var("EXT_SUFFIX")):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:20]


def library_path(cache_dir: Path | None = None, ext: Extension = CPU) -> Path:
    key = build_key(ext)
    return Path(cache_dir or cache_root()) / key / f"{ext.module}{sysconfig.get_config_var('EXT_SUFFIX')}"


def cuda_build() -> bool:
    """Whether the installed mlx is MLX's CUDA build with a GPU to run on (the CUDA extension's
    condition: every mlx wheel ships the CUDA backend's headers, only that build its library)."""
    import mlx.core as mx

    return mx.cuda.is_available()


def _cmake() -> str:
    """pip's cmake: the extension needs CMake >= 3.27, newer than many systems ship."""
    try:
        import cmake
    except ImportError:
        raise NativeBuildError("pip's cmake is not installed (pip install 'cmake>=3.27')") from None
    return os.path.join(cmake.CMAKE_BIN_DIR, "cmake")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One build at a time per key: parallel Snakemake jobs or test workers wait for the first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(step: str, command: list[str], log: list[str], timeout_s: float) -> None:
    log.append("$ " + " ".join(command))
    try:
        proc = run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise NativeBuildError(f"{step} ran past {timeout_s} s") from None
    except OSError as err:
        raise NativeBuildError(f"{step} could not start: {err}") from None
    log.append(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        tail = "\n".join(log)[-LOG_TAIL_CHARS:]
        raise NativeBuildError(f"{step} failed (exit {proc.returncode}):\n{tail}")


def build(cache_dir: Path | None = None, timeout_s: float = 900, ext: Extension = CPU) -> Path:
    """Build the extension unless a build with the same key exists; returns the library's path.

    The library is moved into place whole (a reader never loads half a file) and the build log is
    kept beside it."""
    lib = library_path(cache_dir, ext)
    if lib.exists():
        return lib
    with _locked(lib.parent.with_suffix(".lock")):
        if lib.exists():
            return lib
        cmake, log = _cmake(), []
        lib.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=lib.parent.parent) as tmp:
            _run("cmake configure", [cmake, "-S", str(SOURCE_DIR / ext.folder), "-B", tmp, "-DCMAKE_BUILD_TYPE=Release",
                                     f"-DPython_EXECUTABLE={sys.executable}"], log, timeout_s)
            _run("cmake build", [cmake, "--build", tmp, "--parallel", str(os.cpu_count() or 1)],
                 log, timeout_s)
            staged = lib.parent / f".{lib.name}.tmp"
            shutil.copyfile(Path(tmp) / lib.name, staged)
            os.replace(staged, lib)
        (lib.parent / "build.log").write_text("\n".join(log))
    return lib


def load(cache_dir: Path | None = None, ext: Extension = CPU) -> ModuleType | None:
    """The built extension, or None when it is turned off or not built (the ctypes path runs).

    A build that exists but does not load (an mlx or nanobind changed under it) warns once: the
    kernels still run, through ctypes. Once loaded, the module is kept per `cache_dir`, so a call
    costs a dictionary lookup."""
    if os.environ.get(DISABLE) == "0":
        return None
    if (cache_dir, ext) in _loaded:
        return _loaded[cache_dir, ext]
    try:
        lib = library_path(cache_dir, ext)
    except NativeBuildError:
        return None
    if not lib.exists():
        return None

    spec = importlib.util.spec_from_file_location(ext.module, lib)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as err:
        warnings.warn(f"native dispatch off: {lib} does not load ({err})", RuntimeWarning)
        module = None
    _loaded[cache_dir, ext] = module
    return module


def describe(ext: Extension = CPU) -> dict:
    """Which dispatch path kernels take in this process, for benchmark provenance: for CPU kernels
    native or ctypes; for CUDA's (ext=CUDA), native or MLX's precompiled_cuda_kernel."""
    if os.environ.get(DISABLE) == "0":
        return {"dispatch": ext.fallback, "why": f"{DISABLE}=0"}
    try:
        lib = library_path(None, ext)
    except NativeBuildError as err:
        return {"dispatch": ext.fallback, "why": str(err)}
    if load(None, ext) is None:
        return {"dispatch": ext.fallback, "why": f"extension not built ({lib} missing or not loadable)"}
    return {"dispatch": "native", "library": str(lib)}


def check_inputs(name: str, inputs: Sequence, in_shapes: Sequence[Sequence[int]], in_dtypes: Sequence) -> None:
    """What a Launcher checks at every call (native/common.h), for the paths without one: the
    arrays a launch was made for, their count, shapes and dtypes. A kernel's sizes are fixed at its
    launch, so any other array would be read out of its bounds; the error names the first misfit."""
    if len(inputs) != len(in_shapes):
        raise ValueError(f"{name}: takes {len(in_shapes)} inputs, got {len(inputs)}")
    for i, (x, shape, dtype) in enumerate(zip(inputs, in_shapes, in_dtypes)):
        if tuple(x.shape) != tuple(shape) or x.dtype != dtype:
            raise ValueError(f"{name}: input {i} is {_described(x.dtype, x.shape)}, and the launch was "
                             f"made for {_described(dtype, shape)}")


def _described(dtype, shape) -> str:
    """'float32 [4096, 1024]', as the Launcher says it."""
    return f"{str(dtype).rsplit('.', 1)[-1]} [{', '.join(map(str, shape))}]"


def kernel_call(inputs: Sequence, fn_address: int, dims: Sequence[int], strides: Sequence[int],
                out_shapes: Sequence[Sequence[int]], out_dtypes: Sequence, name: str) -> list:
    """Lazy MLX arrays computed by the kernel at `fn_address` (KernelIR ABI) on `inputs`.

    `strides` holds every input's launch strides, flattened; inputs that are not row-contiguous are
    made so by MLX (`mx.contiguous`, a copy only when needed). The launch is made for `inputs`
    (their shapes and dtypes), so the caller's `dims` and `strides` must fit them."""
    ext = load()
    if ext is None:
        raise NativeBuildError(f"native dispatch is not available: {describe()['why']}")
    return ext.launcher(fn_address, [list(x.shape) for x in inputs], [x.dtype for x in inputs],
                        list(dims), list(strides) or [0],
                        [list(s) for s in out_shapes], list(out_dtypes), name)(list(inputs))


def compare(op: str, config: str, shapes: dict[str, tuple[int, ...]], repeats: int) -> str:
    """Native dispatch vs ctypes vs MLX eager for one op of `config`, under both allocator
    conditions (autoperfect.contenders:dispatch in a child per condition), as a small table."""
    import yaml

    from . import bench
    from .spec import parse_ops

    with open(config, encoding="utf-8") as f:
        spec = parse_ops(yaml.safe_load(f)["ops"])[op]
    spec = spec.with_shapes(shapes) if shapes else spec
    payload = {"spec": spec.to_json(), "warmup": 5, "repeats": repeats}
    shapes_seen = {i.name: list(i.shape) for i in spec.inputs}
    lines = [f"{op} {shapes_seen}, {repeats} interleaved rounds",
             "| condition | path | median us [95% CI] | speedup over mlx_eager [95% CI] |",
             "| --- | --- | --- | --- |"]
    for condition in bench.ALLOCATOR_CONDITIONS:
        result = bench.run_condition(condition, "autoperfect.contenders:dispatch", payload, 1800)
        for path, s in result["timings"].items():
            lo, hi = (1e6 * v for v in s["ci95_s"])
            ratio = result["speedup_over_mlx_eager"].get(path)
            cell = f"{ratio['median']:.2f} [{ratio['ci95'][0]:.2f}, {ratio['ci95'][1]:.2f}]" if ratio else "1"
            median = 1e6 * s["median_s"]
            lines.append(f"| {condition} | {path} | {median:.1f} [{lo:.1f}, {hi:.1f}] | {cell} |")
    return "\n".join(lines)


def _shape(text: str) -> tuple[str, tuple[int, ...]]:
    name, _, dims = text.partition("=")
    return name, tuple(int(d) for d in dims.split(",") if d)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autoperfect.native", description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=("build", "status", "compare"))
    parser.add_argument("op", nargs="?", help="compare: an op of the config")
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--shape", action="append", type=_shape, default=[],
                        help="compare: an input's shape, e.g. x=64,33 (once per input; default: the spec's)")
    parser.add_argument("--repeats", type=int, default=41)
    args = parser.parse_args(argv)
    if args.command == "build":
        failed = False
        for ext in (CPU, CUDA):
            if ext == CUDA and not cuda_build():
                print(f"{ext.serves}: not built (no GPU for MLX's CUDA build here)")
                continue
            try:
                print(f"{ext.serves}: {build(ext=ext)}")
            except NativeBuildError as err:
                print(f"{ext.serves} unavailable, kernels will run through {ext.fallback}: {err}", file=sys.stderr)
                failed = True
        return int(failed)
    if args.command == "compare":
        if not args.op:
            parser.error("compare needs an op")
        print(compare(args.op, args.config, dict(args.shape), args.repeats))
        return 0
    print(describe())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
