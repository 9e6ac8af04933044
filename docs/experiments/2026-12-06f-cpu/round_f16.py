"""Builds and runs round_f16.c against the prelude cfamily renders now (written to a temporary
prelude.h): `python round_f16.py` (PYTHONPATH at a checkout)."""
import pathlib
import subprocess
import tempfile

from autoperfect.backends import cfamily

HERE = pathlib.Path(__file__).resolve().parent

with tempfile.TemporaryDirectory() as tmp:
    (pathlib.Path(tmp) / "prelude.h").write_text("#include <stdint.h>\n" + cfamily.PRELUDE)
    exe = pathlib.Path(tmp) / "round_f16"
    subprocess.run(["gcc", "-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off",
                    f"-I{tmp}", "-o", str(exe), str(HERE / "round_f16.c")], check=True)
    subprocess.run([str(exe)], check=True)
