# Both sides of compensated summation (what it costs, what it buys) by row length; it times, so it
# claims every core.
rule summation:
    input:
        native="results/native.json",
    output:
        "results/summation.json",
    threads: workflow.cores
    params:
        code=stage_hash("autoperfect.summation"),
    script:
        "../scripts/summation.py"
