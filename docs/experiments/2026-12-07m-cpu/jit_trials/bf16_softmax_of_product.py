# softmax(x * y) with bfloat16 inputs under autoperfect.jit returns NaN where MLX returns finite
# probabilities, once the product is large enough that its bfloat16 rounding moves it by > ~88.
import numpy as np, mlx.core as mx, autoperfect
def f(x, y):
    return mx.softmax(x * y, axis=-1)
j = autoperfect.jit(f, race=False)
bf = lambda v: mx.array(np.array(v, np.float32)).astype(mx.bfloat16)
j(bf([[1.0, 2.0, 3.0, 4.0]]), bf([[1.0, 1.0, 1.0, 1.0]]))      # first call: compiled, checked, agrees
x, y = bf([[255.0, 1.0, -3.0, 2.0]]), bf([[30000.0, 1.0, 1.0, 1.0]])
print("x*y in bf16 (MLX):", np.asarray((x * y).astype(mx.float32)).tolist(), " exact:", 255.0 * 30000.0)
print("jit:", np.asarray(j(x, y).astype(mx.float32)).tolist())
print("mlx:", np.asarray(f(x, y).astype(mx.float32)).tolist())
print(j.last_trace.describe())
