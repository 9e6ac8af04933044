# Tables and plots for people: results/report.md, the same page as self-contained HTML
# (results/summary.html) and one PNG per plot. The report(...) flags put them, with captions from
# report/, into `snakemake --cores 4 --report results/report.html`: category "Summary" here, one per
# op for the stages' artifacts (rules/fuse.smk, lower, validate, bench, mutants).
import os


def finished_mutants(wildcards):
    """The mutants.json files that exist: an optional input.

    Planting bugs is not part of `all` (it claims every core for minutes), so the report can't
    require it; yet once `snakemake mutants` has written them, the report must show them without
    a --forcerun. Listing the existing files as inputs does that soundly through Snakemake's own
    rerun triggers: after `mutants`, a newer input (and a changed input set) reruns the report in the
    next `snakemake all`; deleting them reruns it too; and, once planted, they are inputs like any
    other, so when a kernel changes `all` replants its bugs rather than report stale ones. (Making
    the inputs depend on which targets were requested would tie the DAG to the command line;
    delete the files to stop reporting them.)"""
    paths = expand("results/{op}/{backend}/mutants.json", op=OPS, backend=BACKENDS)
    return [p for p in paths if os.path.exists(p)]


rule report:
    input:
        expand("results/{op}/regions.json", op=OPS),
        expand("results/{op}/{backend}/validation.json", op=OPS, backend=BACKENDS),
        expand("results/{op}/{backend}/bench.json", op=OPS, backend=BACKENDS),
        "results/roofline.json",
        "results/summation.json",
        "results/schedule_model.json",
        RUNTIME_TARGETS,
        mutants=finished_mutants,
    output:
        md=report("results/report.md", caption="../report/report_md.rst", category="Summary",
                  subcategory="report", labels={"artifact": "report (markdown)"}),
        html=report("results/summary.html", caption="../report/summary.rst", category="Summary",
                    subcategory="report", labels={"artifact": "report (tables and plots)"}),
        # autoperfect.report.PLOTS, one output each so each plot has its own caption
        speedup=report("results/plots/speedup.png", caption="../report/speedup.rst",
                       category="Summary", subcategory="plots", labels={"plot": "speedup over baselines"}),
        roofline=report("results/plots/roofline.png", caption="../report/roofline.rst",
                        category="Summary", subcategory="plots", labels={"plot": "bandwidth against the roofline"}),
        sizes=report("results/plots/sizes.png", caption="../report/sizes.rst",
                     category="Summary", subcategory="plots", labels={"plot": "time against size"}),
    params:
        ops=list(OPS),
        backends=BACKENDS,
        code=stage_hash("autoperfect.report"),
    script:
        "../scripts/report.py"
