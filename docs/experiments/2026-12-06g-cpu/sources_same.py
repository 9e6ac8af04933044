"""Every CPU source the pipeline would build for the ops of config.yaml and configs/*.yaml, rendered
by this checkout's cfamily.py and by a commit's (default HEAD, loaded from git), compared text for
text: `python sources_same.py [commit] [--functions]` (PYTHONPATH at a checkout) prints the kernels
and schedules whose source differs; with --functions only the kernel functions are compared (from
`void NAME(` on: not the prelude of helpers every source carries)."""
import importlib.util
import pathlib
import subprocess
import sys

import yaml

from autoperfect.backends import cfamily, cpu
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

ROOT = pathlib.Path(__file__).resolve().parents[3]
ARGS = [a for a in sys.argv[1:] if a != "--functions"]
COMMIT = ARGS[0] if ARGS else "HEAD"
FUNCTIONS = "--functions" in sys.argv


def compared(source: str, name: str) -> str:
    return source[source.index(f"void {name}("):] if FUNCTIONS else source


def load(commit: str, path: str, name: str):
    """The module at `path` as it was at `commit`, loaded as autoperfect.backends.`name` (half_stage.py
    uses it too)."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True, text=True,
                          check=True).stdout
    spec = importlib.util.spec_from_loader(f"autoperfect.backends.{name}", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__, module.__file__ = "autoperfect.backends", str(ROOT / path)
    sys.modules[spec.name] = module
    exec(compile(text, f"{name}.py", "exec"), module.__dict__)
    return module


def main() -> None:
    old = load(COMMIT, "autoperfect/backends/cfamily.py", "cfamily_then")
    differ = same = 0
    for config in [ROOT / "config.yaml", *sorted((ROOT / "configs").glob("*.yaml"))]:
        ops = (yaml.safe_load(config.read_text()) or {}).get("ops", {})
        for name, entry in ops.items():
            try:
                kernels = [k for k in front(parse_op(name, entry)).kernels if k is not None]
            except Exception as e:  # noqa: BLE001 - a config op the front end refuses is reported, not fatal
                print(f"{config.name} {name}: not traced ({e})")
                continue
            for k in kernels:
                for s in cpu.schedules_for(k):
                    try:
                        then = old.CRenderer(k, s).render()
                    except Exception as e:  # noqa: BLE001
                        then = f"error {e}"
                    if compared(then, k.name) == compared(cfamily.CRenderer(k, s).render(), k.name):
                        same += 1
                    else:
                        differ += 1
                        print(f"{config.name} {name} {k.name} {s.name}: differs")
    print(f"{same} sources the same, {differ} differ")


if __name__ == "__main__":
    main()
