"""The fresh-user walkthrough's jit of a softmax over axis 0 (64x128 float32): every region's gate
and the race against MLX, as last_trace describes them, and whether the result matches MLX's.
Run: python softmax_axis0.py (PYTHONPATH at a checkout); the kernel cache goes to a fresh temp dir."""
import tempfile

import mlx.core as mx
import numpy as np

import autoperfect

x = mx.array(np.random.default_rng(0).standard_normal((64, 128)).astype(np.float32))


def sm(x):
    return mx.softmax(x, axis=0)


jitted = autoperfect.jit(sm, cache_dir=tempfile.mkdtemp())
y = jitted(x)
print("matches MLX:", np.allclose(np.array(y), np.array(sm(x)), atol=1e-6))
print(jitted.last_trace.describe())
