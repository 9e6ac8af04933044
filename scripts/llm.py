from pathlib import Path

from autoperfect.generate import llm

i, o, p = snakemake.input, snakemake.output, snakemake.params
llm.stage(p.spec, i.kernels, i.candidates, i.compiled, dict(p.generator), dict(p.judge), p.cache,
          str(Path(i.templates[0]).parent), i.playbook or None, i.replays or None,
          o.summary, o.prompts, o.replies, o.logs)
