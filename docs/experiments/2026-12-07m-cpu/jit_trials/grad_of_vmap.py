# mx.grad through mx.vmap of an autoperfect.jit function returns all-zero gradients (MLX: exp(x)*2)
import mlx.core as mx, numpy as np, autoperfect
def f(x):
    return mx.exp(x) * 2.0
j = autoperfect.jit(f, race=False)
mx.random.seed(0)
j(mx.random.normal((4, 16)))                       # compile + check at one example's shape
xb = mx.random.normal((3, 4, 16))                  # a batch of 3 examples
print("forward vmap max|diff|:", mx.abs(mx.vmap(j)(xb) - mx.vmap(f)(xb)).max().item())
gj = mx.grad(lambda a: mx.sum(mx.vmap(j)(a)))(xb)
gf = mx.grad(lambda a: mx.sum(mx.vmap(f)(a)))(xb)
print("grad(vmap(jit)) abs sum:", mx.abs(gj).sum().item(), " grad(vmap(f)) abs sum:", mx.abs(gf).sum().item())
print("grad(vmap(jit)) [0,0,:4]:", np.asarray(gj[0, 0, :4]).tolist(), " mlx:", np.asarray(gf[0, 0, :4]).tolist())
gj2 = mx.vmap(mx.grad(lambda a: mx.sum(j(a))))(xb)
print("vmap(grad(jit)) max|diff|:", mx.abs(gj2 - gf).max().item())
print(j.last_trace.describe())
