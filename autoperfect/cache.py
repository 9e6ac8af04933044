"""The kernel cache: verified kernels, stored where the pipeline and user code can find them again.

An entry is keyed by everything that decides whether a verdict still holds: the kernel's structural
hash (its KernelIR name), its launch (shapes and strides), its dtypes, the backend, the chip and the
compiler version (a hash of the code that renders, builds and judges kernels, plus the C compiler).
Entries of one compiler version live in their own directory, so a new version never reads an old
one's entries. An entry carries the kernel's source, its built library, the verdict and benchmark
figures; a library is stored under its own sha256.

Nothing read back is trusted: a corrupt, truncated or foreign entry (another key, a source or
library whose hash does not match) is refused with a `CacheWarning` and never loaded, and the
caller rebuilds it. Every write is a temp file plus a rename, so two processes filling the cache at
once leave whole entries (the last writer of a key wins) and readers never see half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from . import artifacts, backends, bench
from .kernel_ir import KernelIR
from .provenance import stage_hash
from .schedule_model import Timed

FORMAT = 1
# The code a verdict depends on: rendering and building (generate.compiler imports the backends),
# judging (the judge's, and the quick gate's in autoperfect.runtime, which judge.py does not import),
# and this module's own format.
VERSIONED = ("autoperfect.generate.compiler", "autoperfect.judge", "autoperfect.runtime", "autoperfect.cache")


def _well_formed(launches: dict) -> list[dict]:
    """The records of a timings index's launches that have dims and medians."""
    return [t for t in launches.values()
            if isinstance(t, dict) and isinstance(t.get("dims"), list) and isinstance(t.get("median_s"), dict)]


class CacheWarning(UserWarning):
    """A cache entry was refused; the message names the file and why."""


def default_root() -> Path:
    """The runtime's per-user cache (beside backends.cpu's build cache under AUTOPERFECT_CACHE)."""
    return Path(os.environ.get("AUTOPERFECT_CACHE", Path.home() / ".cache" / "autoperfect")) / "kernels"


@lru_cache(maxsize=None)
def compiler_version(backend: str) -> str:
    """Changes whenever the package code in VERSIONED or the system compiler changes."""
    text = f"{FORMAT}\0{stage_hash(*VERSIONED)}\0{backends.get(backend).compiler()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def chip() -> str:
    """The processor kernels were built for (-march=native) and verified on."""
    return f"{platform.machine()}: {bench.machine()['cpu']}"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Key:
    kernel: str          # KernelIR name: structural hash of the size-free signature
    launch: dict         # Launch.to_json(): the sizes and strides the verdict covers
    dtypes: tuple[str, ...]
    backend: str
    chip: str
    compiler: str        # compiler_version(backend)

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "launch": self.launch, "dtypes": list(self.dtypes),
                "backend": self.backend, "chip": self.chip, "compiler": self.compiler}

    def digest(self) -> str:
        return _sha256(json.dumps(self.to_json(), sort_keys=True).encode())[:32]


def key_for(kernel: KernelIR, backend: str) -> Key:
    return Key(kernel.name, kernel.launch.to_json(), tuple(a.dtype for a in kernel.args), backend,
               chip(), compiler_version(backend))


@dataclass(frozen=True)
class Entry:
    key: Key
    kernel: KernelIR
    variant: str
    source: str
    library: Path | None  # checked against the sha256 recorded at store time; None for a failed verdict
    verdict: dict
    bench: dict
    origin: str          # who verified it: "pipeline" (the full judge) or "runtime" (the quick gate)

    @property
    def passed(self) -> bool:
        return bool(self.verdict.get("passed"))


class Refused(Exception):
    """Why an entry on disk can't be used (turned into a CacheWarning by Cache.lookup)."""


class Cache:
    """One cache directory: `<root>/<backend>-<compiler version>/<key digest>.json` and `lib/<sha256>.so`
    beside them."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else default_root()

    def version_dir(self, key: Key) -> Path:
        return self.root / f"{key.backend}-{key.compiler}"

    def current_dir(self, backend: str) -> Path:
        """`backend`'s directory for this compiler version (version_dir of every key made now)."""
        return self.root / f"{backend}-{compiler_version(backend)}"

    def path(self, key: Key) -> Path:
        return self.version_dir(key) / f"{key.digest()}.json"

    def build_dir(self, backend: str) -> Path:
        """Where candidates are compiled before they are verified (backends' build cache)."""
        return self.current_dir(backend) / "build"

    # -- reading ---------------------------------------------------------------------------------

    def lookup(self, key: Key) -> Entry | None:
        """The entry for `key`, checked; None when there is none or it was refused (with a warning)."""
        path = self.path(key)
        try:
            return self._read(path, key)
        except FileNotFoundError:
            return None
        except Refused as e:
            warnings.warn(CacheWarning(f"refused cache entry {path}: {e}; it is not loaded (a new build replaces "
                                       "it where compiling is allowed)"), stacklevel=2)
            return None

    def _read(self, path: Path, key: Key) -> Entry:
        try:
            data = json.loads(path.read_text())
        except (UnicodeDecodeError, ValueError) as e:
            raise Refused(f"corrupt or truncated ({type(e).__name__})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise Refused(f"not an entry of format {FORMAT}")
        try:
            if data["key"] != key.to_json() or path.stem != key.digest():
                raise Refused("written for another key")
            source = data["source"]
            if _sha256(source.encode()) != data["source_sha256"]:
                raise Refused("its source does not match its sha256 (tampered or damaged)")
            kernel = KernelIR.from_json(data["kernel"])
            if kernel.name != key.kernel or kernel.launch.to_json() != key.launch:
                raise Refused("its kernel is not the one the key names")
            library = None
            if data["verdict"]["passed"]:
                library = self.version_dir(key) / "lib" / Path(data["library"]["file"]).name
                if not library.is_file() or _sha256(library.read_bytes()) != data["library"]["sha256"]:
                    raise Refused(f"its library {library.name} is missing or does not match its sha256")
            return Entry(key, kernel, data["variant"], source, library, data["verdict"], data["bench"],
                         data["origin"])
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise Refused(f"malformed ({type(e).__name__}: {e})") from None

    # -- writing ---------------------------------------------------------------------------------

    def store(self, kernel: KernelIR, backend: str, variant: str, source: str, library: str | None,
              verdict: dict, bench_figures: dict, origin: str) -> Entry:
        """Write one entry (a failed verdict too: it tells the runtime not to try again). The library
        is copied in under its own hash, so entries never share a file that could change under them."""
        key = key_for(kernel, backend)
        record = {"format": FORMAT, "key": key.to_json(), "key_digest": key.digest(),
                  "kernel": kernel.to_json(), "variant": variant, "source": source,
                  "source_sha256": _sha256(source.encode()), "verdict": verdict, "bench": bench_figures,
                  "origin": origin, "library": self._store_library(key, library),
                  "stored_at": bench.measured_at()}
        artifacts.write_json(self.path(key), record)
        self._record_timings(key, kernel, bench_figures)
        lib_path = self.version_dir(key) / "lib" / record["library"]["file"] if library else None
        return Entry(key, kernel, variant, source, lib_path, verdict, bench_figures, origin)

    # -- recorded timings ------------------------------------------------------------------------
    # Per kernel (its structural name, every launch alike), the variants' medians each launch was
    # timed at, by the runtime's choice or the pipeline's benchmark: what autoperfect.runtime ranks a
    # new launch's variants by. An index beside the entries, `timings/<kernel>.json`; it is a hint,
    # never a verdict, so a write lost to another process (last writer wins) costs a ranking, no more.

    def timings_path(self, kernel: str, backend: str) -> Path:
        return self.current_dir(backend) / "timings" / f"{kernel}.json"

    def timings(self, kernel: str, backend: str) -> list[dict]:
        """[{"dims": launch dims, "median_s": {variant: seconds}}] recorded for `kernel` on `backend`
        (this compiler version), in no particular order; [] where none is, or the index is unreadable."""
        return _well_formed(self._launches(self._index(self.timings_path(kernel, backend))))

    @staticmethod
    def _index(path: Path) -> dict:
        """A timings index as written; {} where there is none or it is unreadable."""
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @staticmethod
    def _launches(index: dict) -> dict:
        """An index's records by key digest ({} where it has none)."""
        launches = index.get("launches")
        return launches if isinstance(launches, dict) else {}

    def _record_timings(self, key: Key, kernel: KernelIR, bench_figures: dict) -> None:
        figures = bench_figures.get("variants", bench_figures)  # the pipeline's bench.json or a runtime choice
        medians = figures.get("median_s") if isinstance(figures, dict) else None
        if not (isinstance(medians, dict) and len(medians) > 1):
            return
        path = self.timings_path(kernel.name, key.backend)
        known = self._launches(self._index(path))
        known[key.digest()] = {"dims": list(kernel.launch.dims), "median_s": dict(medians)}
        artifacts.write_json(path, {"kernel": kernel.name, "ir": kernel.to_json(), "launches": known})

    def timed(self, backend: str) -> list[Timed]:
        """Every kernel's recorded launches on `backend` (this compiler version) with the kernel's IR:
        what autoperfect.schedule_model learns from. An index that is unreadable or written before it
        kept the IR is skipped."""
        found = []
        for path in sorted((self.current_dir(backend) / "timings").glob("*.json")):
            index = self._index(path)
            try:
                kernel = KernelIR.from_json(index["ir"])
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
            found += [Timed(kernel, tuple(t["dims"]), t["median_s"]) for t in _well_formed(self._launches(index))]
        return found

    # -- recorded races --------------------------------------------------------------------------
    # The runtime's race of a plan against the function's own MLX ops (runtime.Jit._race), by a digest
    # of the traced function at its signature, the kernels and variants the plan runs and the chip:
    # `races/<digest>.json`, so a first call from disk reuses the outcome instead of timing again.
    # A hint like the timings: one unreadable or lost is raced anew.

    def race(self, backend: str, digest: str) -> dict | None:
        try:
            record = json.loads((self.current_dir(backend) / "races" / f"{digest}.json").read_text())
        except (OSError, ValueError):
            return None
        race = record.get("race") if isinstance(record, dict) else None
        fields = ("kernels_s", "mlx_s", "mlx_runs")
        return race if isinstance(race, dict) and all(f in race for f in fields) else None

    def store_race(self, backend: str, digest: str, race: dict) -> None:
        artifacts.write_json(str(self.current_dir(backend) / "races" / f"{digest}.json"),
                             {"digest": digest, "race": race, "stored_at": bench.measured_at()})

    def _store_library(self, key: Key, library: str | None) -> dict:
        if library is None:
            return {"file": "", "sha256": ""}
        data = Path(library).read_bytes()
        digest = _sha256(data)
        target = self.version_dir(key) / "lib" / f"{digest[:32]}.so"
        if not (target.is_file() and _sha256(target.read_bytes()) == digest):
            with bench.atomic_output(str(target)) as tmp:
                shutil.copyfile(library, tmp)
        return {"file": target.name, "sha256": digest}

    def prune(self, backend: str) -> list[str]:
        """Delete `backend`'s directories of other compiler versions (never read again); returns their
        names."""
        keep = self.current_dir(backend).name
        found = self.root.iterdir() if self.root.is_dir() else []
        stale = [p for p in found if p.is_dir() and p.name.startswith(f"{backend}-") and p.name != keep]
        for p in stale:
            shutil.rmtree(p, ignore_errors=True)
        return sorted(p.name for p in stale)
