import tempfile, time, mlx.core as mx, autoperfect
def rmsnorm(x, w):
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w
def first(cache, rows):
    x, w = mx.random.normal((rows, 1024)), mx.random.normal((1024,)); mx.eval(x, w)
    f = autoperfect.jit(rmsnorm, cache_dir=cache)
    t = time.perf_counter(); mx.eval(f(x, w)); s = time.perf_counter() - t
    return s, {k: round(v, 2) for k, v in f.last_trace.setup.items()}, f.last_trace.kernels[0].variant
for rep in range(2):
    warm = tempfile.mkdtemp()
    print("seed 4096 rows   ", first(warm, 4096))
    print("ranked 2048 rows ", first(warm, 2048))
    print("fresh 2048 rows  ", first(tempfile.mkdtemp(), 2048))
