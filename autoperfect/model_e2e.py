"""End to end on a real architecture: a Qwen2-architecture model (mlx-lm, random weights, built
offline) decoding greedily, with and without autoperfect.jit on its RMSNorms, the elementwise part of
its SiLU-gated MLP and its attention softmax.

Three variants share one set of weights:
- `stock`: mlx-lm as shipped (mx.fast.rms_norm, an mx.compile'd swiglu, mx.fast's fused attention);
- `written`: the same model with those three written out in plain MLX ops (SOURCES), run eagerly:
  what a user writes, and what autoperfect fuses;
- `jit`: the written functions wrapped in autoperfect.jit.
`written` and `jit` compute the same math, so their greedy tokens must be identical and their
logits within tolerance; `stock` is the bar that MLX's hand-fused ops set.

How the model is changed: each RMSNorm module is replaced by a `Norm` calling the written function
with the module's own weight, each MLP by a `GatedMLP` over the same projections. The attention's
fused kernel is replaced, only while a variant runs, by `explicit_attention` (matmuls in MLX, the
softmax written out), through mlx-lm's module-level `scaled_dot_product_attention`, restored after.
Replacing modules rather than patching classes keeps the three variants apart in one process.

The functions are compiled from source text, like config.yaml's ops, so the lines the runtime's
trace shows for each kernel are the lines of SOURCES.

    python -m autoperfect.model_e2e --out results/model_e2e.json
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from typing import Callable

import numpy as np

from . import artifacts, bench, native
from .contenders import agrees
from .runtime import jit
from .spec import seed_for
from .trace import function_from_source

SOURCES = {
    "rms_norm": "def rms_norm(x, w):\n"
                "    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + {eps!r}) * w\n",
    "swiglu": "def swiglu(gate, up):\n"
              "    return gate * mx.sigmoid(gate) * up\n",
    "softmax": "def softmax(scores):\n"
               "    return mx.softmax(scores, axis=-1)\n",
}
# Small enough to finish in about two minutes on two cores, big enough for norms and activations to
# be more than noise: the vocabulary is kept small so the tied output projection doesn't dominate.
DEFAULTS = {"hidden_size": 1024, "layers": 4, "intermediate_size": 2816, "heads": 16, "kv_heads": 2,
            "vocab_size": 8192, "batch": 4, "prompt": 32, "tokens": 8, "warmup": 1, "repeats": 5,
            "timeout_s": 900, "race": True}  # race: autoperfect.jit's race against MLX's own ops


def written_functions(eps: float) -> dict[str, Callable]:
    return {name: function_from_source(source.format(eps=eps), f"<model_e2e {name}>")
            for name, source in SOURCES.items()}


class Norm:
    """Stands in for nn.RMSNorm: the written function with the module's own weight."""

    def __init__(self, weight, fn: Callable):
        self.weight, self.fn = weight, fn

    def __call__(self, x):
        return self.fn(x, self.weight)


class GatedMLP:
    """Stands in for qwen2's MLP: the same projections around the written gated activation."""

    def __init__(self, mlp, act: Callable):
        self.gate_proj, self.up_proj, self.down_proj = mlp.gate_proj, mlp.up_proj, mlp.down_proj
        self.act = act

    def __call__(self, x):
        return self.down_proj(self.act(self.gate_proj(x), self.up_proj(x)))


def explicit_attention(softmax: Callable) -> Callable:
    """mlx-lm's scaled_dot_product_attention written out: matmuls by MLX, `softmax` in between."""
    import mlx.core as mx

    def attention(queries, keys, values, cache, scale, mask, sinks=None):
        b, heads, length, dim = queries.shape
        kv, total = keys.shape[1], keys.shape[2]
        groups = heads // kv  # grouped-query attention: `groups` query heads share one key/value head
        scores = (queries * scale).reshape(b, kv, groups * length, dim) @ keys.swapaxes(-1, -2)
        if isinstance(mask, str) or mask is not None:
            if isinstance(mask, str):  # "causal": query i sees keys up to its own position
                mask = mx.arange(total)[None] <= mx.arange(total - length, total)[:, None]
            scores = scores.reshape(b, kv, groups, length, total)
            scores = mx.where(mask, scores, -mx.inf) if mask.dtype == mx.bool_ else scores + mask
            scores = scores.reshape(b, kv, groups * length, total)
        return (softmax(scores) @ values).reshape(b, heads, length, dim)
    return attention


def build(settings: dict):
    """The stock model with random weights (seeded), and its arguments."""
    import mlx.core as mx
    from mlx_lm.models import qwen2

    args = qwen2.ModelArgs(model_type="qwen2", hidden_size=settings["hidden_size"],
                           num_hidden_layers=settings["layers"],
                           intermediate_size=settings["intermediate_size"],
                           num_attention_heads=settings["heads"], num_key_value_heads=settings["kv_heads"],
                           rms_norm_eps=1e-6, vocab_size=settings["vocab_size"])
    mx.random.seed(seed_for("model_e2e", "weights") % 2**32)
    model = qwen2.Model(args)
    mx.eval(model.parameters())
    return model, args


def rewritten(model, args, fns: dict[str, Callable]):
    """A twin of `model` sharing its weights, with norms and MLPs replaced by the functions `fns`."""
    from mlx_lm.models import qwen2

    twin = qwen2.Model(args)
    twin.update(model.parameters())
    for layer in twin.model.layers:
        layer.input_layernorm = Norm(layer.input_layernorm.weight, fns["rms_norm"])
        layer.post_attention_layernorm = Norm(layer.post_attention_layernorm.weight, fns["rms_norm"])
        layer.mlp = GatedMLP(layer.mlp, fns["swiglu"])
    twin.model.norm = Norm(twin.model.norm.weight, fns["rms_norm"])
    return twin


@contextlib.contextmanager
def attention_by(attention: Callable | None):
    """Qwen2's attention runs `attention` inside the block (mlx-lm's fused kernel when None)."""
    from mlx_lm.models import qwen2

    original = qwen2.scaled_dot_product_attention
    qwen2.scaled_dot_product_attention = attention or original
    try:
        yield
    finally:
        qwen2.scaled_dot_product_attention = original


def generate(model, attention: Callable | None, prompt, tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """Greedy decoding: (tokens [batch, tokens], the logits each was chosen from [tokens, batch, vocab])."""
    import mlx.core as mx
    from mlx_lm.models.cache import make_prompt_cache

    chosen, logits_seen = [], []
    with attention_by(attention):
        cache = make_prompt_cache(model)
        logits = model(prompt, cache=cache)[:, -1, :]
        for _ in range(tokens):
            token = mx.argmax(logits, axis=-1)
            mx.eval(token, logits)
            chosen.append(token)
            logits_seen.append(logits)
            logits = model(token[:, None], cache=cache)[:, -1, :]
        mx.eval(logits)
    return np.array(mx.stack(chosen, axis=1)), np.array(mx.stack(logits_seen).astype(mx.float32), np.float64)


def measure(payload: dict) -> dict:
    """Child entry point (bench.run_condition): payload has settings and cache_dir (None: a fresh one)."""
    import mlx.core as mx

    s = {**DEFAULTS, **payload["settings"]}
    model, args = build(s)
    fns = written_functions(args.rms_norm_eps)
    rng = np.random.default_rng(seed_for("model_e2e", "prompt"))
    prompt = mx.array(rng.integers(0, s["vocab_size"], size=(s["batch"], s["prompt"])).astype(np.int32))
    with tempfile.TemporaryDirectory() as tmp:
        jitted = {name: jit(fn, cache_dir=payload["cache_dir"] or tmp, race=s["race"]) for name, fn in fns.items()}
        variants = {"stock": (model, None),
                    "written": (rewritten(model, args, fns), explicit_attention(fns["softmax"])),
                    "jit": (rewritten(model, args, jitted), explicit_attention(jitted["softmax"]))}
        outputs = {name: generate(*variants[name], prompt, s["tokens"]) for name in ("stock", "written")}
        start = time.perf_counter()  # the jit's first pass: every signature traced, looked up, maybe gated
        outputs["jit"] = generate(*variants["jit"], prompt, s["tokens"])
        first_pass_s = time.perf_counter() - start
        calls = {name: (lambda m=m, a=a: generate(m, a, prompt, s["tokens"]))
                 for name, (m, a) in variants.items()}
        seed = seed_for("model_e2e", "order")
        samples = bench.time_interleaved(calls, s["warmup"], s["repeats"], seed)
    generated = s["batch"] * s["tokens"]
    return {"settings": s, "generated_tokens": generated,
            "timing": {name: throughput(x, generated, seed) for name, x in samples.items()},
            "speedup": {base: bench.speedup(samples["jit"], samples[base], seed)
                        for base in ("written", "stock")},
            "checks": checks(outputs), "jit_first_pass_s": first_pass_s,
            "runtime": {name: f.stats() for name, f in jitted.items()},
            "dispatch": native.describe(), "machine": bench.machine()}


def throughput(samples: list[float], generated: int, seed: int) -> dict:
    """A generation's time (median, bootstrap interval) and the tokens per second it comes to."""
    t = bench.summarize(samples, seed)
    lo, hi = t["ci95_s"]
    return {**t, "tokens_per_s": generated / t["median_s"],
            "tokens_per_s_ci95": [generated / hi, generated / lo]}


def checks(outputs: dict) -> dict:
    """jit against written (the same math): identical greedy tokens, logits within 1e-3 of their scale
    (contenders.agrees, the bar every baseline meets); stock shown for reference."""
    out = {}
    for name in ("jit", "stock"):
        tokens, logits = outputs[name]
        ref_tokens, ref_logits = outputs["written"]
        diff = np.abs(logits - ref_logits)
        out[name] = {"identical_tokens": bool(np.array_equal(tokens, ref_tokens)),
                     "logits_agree": agrees([logits], [ref_logits]),
                     "max_abs_logit_diff": float(diff.max()),
                     "max_rel_logit_diff": float(diff.max() / np.abs(ref_logits).max()),
                     "tokens": tokens.tolist()}
    out["written_tokens"] = outputs["written"][0].tolist()
    return out


def run(settings: dict, cache_dir: str | None, out: str) -> dict:
    """Measure in a child under the warm allocator condition; write `out` (results/model_e2e.json)."""
    settings = {**DEFAULTS, **settings}
    result = bench.run_condition("warm", "autoperfect.model_e2e:measure",
                                 {"settings": settings, "cache_dir": cache_dir}, settings["timeout_s"])
    result["measured_at"] = bench.measured_at()
    artifacts.write_json(out, result)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A Qwen2 model with and without autoperfect.jit.")
    for key in ("hidden_size", "layers", "batch", "prompt", "tokens", "repeats"):
        parser.add_argument(f"--{key.replace('_', '-')}", type=int, default=DEFAULTS[key])
    parser.add_argument("--cache-dir", default=None, help="the runtime's cache (default: a fresh one)")
    parser.add_argument("--out", default="results/model_e2e.json")
    args = vars(parser.parse_args(argv))
    cache_dir, out = args.pop("cache_dir"), args.pop("out")
    run(args, cache_dir, out)


if __name__ == "__main__":
    main()
