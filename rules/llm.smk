# The LLM loop (generator.provider anthropic or replay): a model's drafts, built and judged against
# the compiler's candidates, every prompt, reply and verdict kept (autoperfect.generate.llm). It
# claims every core, since it times drafts against the champion. With the compiler alone, none of
# this exists and validate reads nothing from it. The API key is checked through `envvars:`, never
# passed in params (those are stored in plain text in .snakemake/metadata).
from glob import glob

from autoperfect.generate.keys import export_key

GENERATOR = config["generator"]
LLM = GENERATOR["provider"] != "compiler"


def llm_summary(wildcards):
    """What validate reads from the LLM stage: nothing when the compiler is the only provider."""
    return f"results/{wildcards.op}/{wildcards.backend}/llm.json" if LLM else []


def prompt_templates(wildcards):
    """The backend's templates (prompts/{backend}*.j2): editing one reruns its jobs."""
    found = sorted(glob(f"prompts/{wildcards.backend}*.j2"))
    if not found:
        raise ValueError(f"generator {GENERATOR['provider']!r}: no prompt templates for backend "
                         f"{wildcards.backend!r} (prompts/{wildcards.backend}.j2)")
    return found


def recorded_replies(wildcards):
    """A replay run reads the replies an earlier run recorded for this op and backend."""
    if GENERATOR["provider"] != "replay":
        return []
    return f"{GENERATOR['replay_dir']}/{wildcards.op}/{wildcards.backend}/replies"


if GENERATOR["provider"] == "anthropic":
    export_key(workflow.basedir)  # a key in .env joins the environment, where envvars checks it

    envvars:
        "ANTHROPIC_API_KEY",


if LLM:

    rule llm:
        input:
            kernels="results/{op}/kernels.json",
            candidates="results/{op}/{backend}/candidates",
            compiled="results/{op}/{backend}/compile.json",
            templates=prompt_templates,
            playbook=GENERATOR["playbook"] or [],
            replays=recorded_replies,
        output:
            summary="results/{op}/{backend}/llm.json",
            prompts=directory("results/{op}/{backend}/prompts"),
            replies=directory("results/{op}/{backend}/replies"),
            logs=directory("results/{op}/{backend}/llm"),
        threads: workflow.cores
        params:
            spec=spec_json,
            generator=GENERATOR,
            judge=config["judge"],
            cache="results/cache/build",
            code=stage_hash("autoperfect.generate.llm", "autoperfect.generate.claude",
                            "autoperfect.generate.replay"),
        script:
            "../scripts/llm.py"
