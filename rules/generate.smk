# Always the compiler's candidates, whatever generator.provider says (autoperfect.stages.generate):
# a language model's drafts come in the llm stage. So the param is the provider this stage uses,
# not the configured one: switching generator.provider reruns the llm stage and what reads it, never
# this deterministic one (which still reruns when its code, the stage hash, changes).
rule generate:
    input:
        "results/{op}/kernels.json",
    output:
        directory("results/{op}/{backend}/candidates"),
    params:
        provider="compiler",
        code=stage_hash("autoperfect.generate.compiler"),
    script:
        "../scripts/generate.py"
