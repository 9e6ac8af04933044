"""The llm stage: the LLM loop (generate.loop) for every kernel of one op on one backend.

It runs after `compile`, since it needs the judge: the compiler's built candidates are its starting
champions and stand in for the op's other kernels. It writes, under results/{op}/{backend}/:
`llm.json` (the model-written champions, built, in compile.json's record format, for validate to
judge again; totals of calls, tokens and cost), `prompts/` (every rendered prompt), `replies/`
(every reply, which a `replay` run serves again), and `llm/` (each kernel's log, every source the
model wrote, and the playbook with the lessons learned).
"""

from __future__ import annotations

import json
from pathlib import Path

from .. import artifacts, bench
from ..judge import Settings
from ..spec import OpSpec
from ..stages import load_kernels
from . import provider
from .lessons import Playbook
from .loop import Context, LoopSettings, run_kernel

SPENDING = ("calls", "input_tokens", "output_tokens", "cost_usd")


def stage(spec_json: str, kernels_path: str, candidates_dir: str, compile_path: str, generator: dict,
          judge: dict, cache_dir: str, templates_dir: str, playbook_path: str | None, replays_dir: str | None,
          out: str, prompts_dir: str, replies_dir: str, logs_dir: str, root: str = ".") -> None:
    spec = OpSpec.from_json(json.loads(spec_json))
    compiled = artifacts.read_json(compile_path)
    backend = compiled["backend"]
    built = [c for c in compiled["candidates"] if c.get("ok")]
    fixed: dict[str, str] = {}
    for c in built:
        fixed.setdefault(c["kernel"], c["library"])  # the op's other kernels: as validate fixes them
    settings = LoopSettings.from_config(generator)
    ctx = Context(spec, backend, fixed, Settings(**judge), Path(cache_dir), Path(templates_dir),
                  Path(prompts_dir), Path(replies_dir), Path(logs_dir), settings)
    for d in (ctx.prompts, ctx.replies, ctx.logs):
        d.mkdir(parents=True, exist_ok=True)
    chat = provider(generator["provider"], {**generator, "root": root, "replies": replays_dir})
    playbook = Playbook.load(playbook_path)
    kernels, offered = {}, []
    totals = dict.fromkeys(SPENDING, 0)
    for k in load_kernels(kernels_path):
        if k.name not in fixed:
            kernels[k.name] = {"skipped": "no compiler candidate was built for it"}
            continue
        mine = [(c, (Path(candidates_dir) / c["file"]).read_text()) for c in built if c["kernel"] == k.name]
        log, offers = run_kernel(ctx, k, chat, playbook, mine)
        artifacts.write_json(ctx.logs / f"{k.name}.json", {"op": spec.name, "backend": backend, **log})
        sessions = {m: log[m] for m in ("loop", "best_of_n") if m in log}
        kernels[k.name] = {"log": f"{ctx.logs.name}/{k.name}.json", "offered": [o["variant"] for o in offers],
                           "champions": {m: s["champion"]["variant"] for m, s in sessions.items()}}
        if "skipped" in log:
            kernels[k.name]["skipped"] = log["skipped"]
        for s in sessions.values():
            totals = {key: totals[key] + s[key] for key in SPENDING}
        offered += offers
    playbook.save(ctx.logs / "playbook.json")
    artifacts.write_json(out, {"op": spec.name, "backend": backend, "provider": chat.name,
                               "mode": settings.mode, "kernels": kernels,
                               "candidates": offered, "totals": totals, "lessons": len(playbook.lessons),
                               "machine": bench.machine(), "measured_at": bench.measured_at()})
