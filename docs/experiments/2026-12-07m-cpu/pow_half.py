import sys, tempfile, pathlib
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "tests"))
import numpy as np
from test_cpu_schedules import spec_of, kernel_of, library, BE
from autoperfect.backends import cpu
tmp = pathlib.Path(tempfile.mkdtemp())
spec = spec_of("f", "def f(x):\n    return mx.power(x, 0.5)\n", x={"shape": [64], "dtype": "float32"})
k = kernel_of(spec)
x = np.array([-np.inf, -0.0, 0.0, 4.0, -1.0, np.inf] + [1.0] * 58, np.float32)
for s in cpu.schedules_for(k):
    out = np.zeros(64, np.float32)
    BE.Kernel(k, library(k, s, tmp), "ctypes").run_numpy([x, out], k.launch)
    print(s.name, out[:6].tolist(), np.signbit(out[:3]).tolist())
