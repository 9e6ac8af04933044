"""The workflow as a user runs it: `snakemake --cores N all` in a fresh directory on a tiny config."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autoperfect import roofline

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ("Snakefile", "rules", "scripts", "schemas", "prompts", "report")

TINY = """\
backends: [cpu]
judge: {shapes: 2, hidden_draws: 1}
bench: {warmup: 1, repeats: 3}
roofline: {quick: true}
ops:
  scale_add:
    fn: |
      def scale_add(x, y):
          return x * 2.0 + y
    inputs:
      x: {shape: [64, 33]}
      y: {shape: [33]}
  rms:
    fn: |
      def rms(x, w):
          return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w
    inputs:
      x: {shape: [16, 40]}
      w: {shape: [40]}
"""


def snakemake(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env or {}), "AUTOPERFECT_CACHE": str(cwd / ".cache")}
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def copy_workflow(dest: Path, config: str) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW:
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest / name)
    (dest / "config.yaml").write_text(config)
    return dest


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Path:
    work = copy_workflow(tmp_path_factory.mktemp("workflow") / "w", TINY)
    proc = snakemake(work, "all")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return work


def fork(ran: Path, tmp_path: Path, config: str | None = None) -> Path:
    """A copy of a finished run (results, metadata and mtimes kept) to change without touching it."""
    dest = tmp_path / "fork"
    shutil.copytree(ran, dest, symlinks=True)
    if config is not None:
        (dest / "config.yaml").write_text(config)
    return dest


def test_dry_run_lists_every_stage(tmp_path):
    work = copy_workflow(tmp_path / "w", TINY)
    proc = snakemake(work, "all", "-n")
    assert proc.returncode == 0, proc.stderr
    for rule in ("trace", "canon", "fuse", "lower", "generate", "compile", "validate", "bench", "report"):
        assert f"rule {rule}:" in proc.stdout


def test_full_run_writes_the_contract(ran):
    for op in ("scale_add", "rms"):
        validation = json.loads((ran / f"results/{op}/cpu/validation.json").read_text())
        assert validation["passed"] is True, validation.get("reason")
        bench = json.loads((ran / f"results/{op}/cpu/bench.json").read_text())
        for key in ("kernel", "baselines", "bytes_moved", "roofline_fraction", "default_allocator"):
            assert key in bench
        assert {"median_s", "ci95_s"} <= set(bench["kernel"])
        assert {"mlx_eager", "mlx_compile", "numpy", "kernelir_mlx"} <= set(bench["baselines"])
        assert bench["baseline_checks"]["kernelir_mlx"] is True   # the same kernels as MLX ops, checked
        steady = bench["steady"]   # back-to-back bursts taking copies of the inputs in turn
        assert set(steady["baselines"]) == set(bench["baselines"]) and steady["burst"] % steady["input_sets"] == 0
        for timed in (bench, steady, bench["default_allocator"]):   # the host's share of the rounds' CPU time
            assert timed["host_steal"] is None or 0 <= timed["host_steal"] <= 1
            # MLX's dispatch of a one-element op in the same rounds, no contender
            assert timed["dispatch_floor"]["median_s"] > 0 and "dispatch_floor" not in timed["baselines"]
        assert steady["stream_in_rounds_fraction"] == pytest.approx(
            steady["achieved_gbps"] / steady["stream_in_rounds"]["mixed_gbps"])
        # the roofline's stream kernels run again in the op's own process, at the roofline's sizes
        own, ceiling = bench["roofline_in_process"], json.loads((ran / "results/roofline.json").read_text())
        assert [(s["elements"], s["pages"]) for s in own["by_size"]] == [
            (n, p) for n in ceiling["sizes"] for p in roofline.page_kinds()] and own["bandwidth_gbps"] > 0
        for stage in ("graph", "canonical", "regions", "kernels"):
            assert (ran / f"results/{op}/{stage}.json").is_file()
    regions = json.loads((ran / "results/rms/regions.json").read_text())
    assert [r["kind"] for r in regions["regions"]] == ["kernel"]
    assert "| rms | cpu | passed |" in (ran / "results/report.md").read_text()
    # ops this small are held to no memory bar, and the report says so rather than "all"
    assert "of the stream bandwidth: no op qualifies" in (ran / "results/report.md").read_text()
    # two ops are too few to fit the schedule model on the others: the stage says so, scores nothing
    scored = json.loads((ran / "results/schedule_model.json").read_text())["backends"]["cpu"]
    assert scored["summary"]["launches"] == 0 and scored["model"] is None
    assert "cpu: nothing to score" in (ran / "results/report.md").read_text()


def test_second_run_has_nothing_to_do(ran):
    proc = snakemake(ran, "all", "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_deterministic_stages_are_byte_identical(ran, tmp_path):
    again = fork(ran, tmp_path)
    for op in ("scale_add", "rms"):
        for stage in ("graph", "canonical", "regions", "kernels"):
            (again / f"results/{op}/{stage}.json").unlink()
    proc = snakemake(again, "--forcerun", "trace", "results/scale_add/kernels.json", "results/rms/kernels.json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    for op in ("scale_add", "rms"):
        for stage in ("graph", "canonical", "regions", "kernels"):
            name = f"results/{op}/{stage}.json"
            assert (again / name).read_bytes() == (ran / name).read_bytes(), name


def test_editing_one_op_reruns_only_that_op(ran, tmp_path):
    work = fork(ran, tmp_path, TINY.replace("1e-6", "1e-5"))
    proc = snakemake(work, "all", "-n")
    assert proc.returncode == 0, proc.stderr
    assert "op=rms" in proc.stdout
    assert "op=scale_add" not in proc.stdout


@pytest.mark.parametrize("good, bad, field", [
    ("      x: {shape: [64, 33]}", "      x: {shape: [64, 33], dtype: float64}", "inputs.x.dtype"),
    ("      x: {shape: [64, 33]}", "      x: {shape: [64, -1]}", "inputs.x.shape"),
    ("    inputs:\n      x: {shape: [64, 33]}", "    input:\n      x: {shape: [64, 33]}", "field 'input': unknown key"),
])
def test_bad_spec_stops_naming_op_and_field(ran, tmp_path, good, bad, field):
    config = TINY.replace(good, bad, 1)
    assert config != TINY
    work = fork(ran, tmp_path, config)
    before = {p: p.stat().st_mtime_ns for p in (work / "results/rms").rglob("*") if p.is_file()}
    proc = snakemake(work, "all")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "op 'scale_add'" in out and field in out
    after = {p: p.stat().st_mtime_ns for p in (work / "results/rms").rglob("*") if p.is_file()}
    assert after == before


def test_untraceable_function_names_op_field_and_line(ran, tmp_path):
    config = TINY.replace("return x * 2.0 + y", "return mx.fft.fft(x) + y")
    work = fork(ran, tmp_path, config)
    proc = snakemake(work, "all", "-n")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "op 'scale_add', field 'fn'" in out
    assert "mx.fft" in out and "return mx.fft.fft(x) + y" in out


def test_shapes_that_do_not_broadcast_are_named(ran, tmp_path):
    config = TINY.replace("      y: {shape: [33]}", "      y: {shape: [34]}")
    work = fork(ran, tmp_path, config)
    proc = snakemake(work, "all", "-n")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "op 'scale_add', field 'fn'" in out and "broadcast" in out


def summary_status(cwd: Path, **env: str) -> dict[str, str]:
    """`snakemake --summary`: each output file's status (ok, params changed, missing, ...)."""
    proc = snakemake(cwd, "--summary", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {row[0]: row[4] for row in (line.split("\t") for line in proc.stdout.splitlines())
            if row[0].startswith("results/")}


def test_switching_the_provider_reruns_the_llm_stage_not_generate(ran, tmp_path):
    """generate always renders the compiler's candidates: the provider is the llm stage's business."""
    work = fork(ran, tmp_path, TINY + "generator: {provider: anthropic}\n")
    status = summary_status(work, ANTHROPIC_API_KEY="sk-test-not-a-key")  # envvars: checked, never used
    for op in ("scale_add", "rms"):
        assert status[f"results/{op}/cpu/candidates"] == "ok"
        assert status[f"results/{op}/cpu/llm.json"] == "missing"
        assert status[f"results/{op}/cpu/validation.json"] != "ok"


def test_a_change_in_the_generator_code_reruns_generate(ran, tmp_path):
    """Snakemake can't see inside the package: the stage hash in generate's params makes it rerun."""
    package = tmp_path / "package"
    shutil.copytree(ROOT / "autoperfect", package / "autoperfect", ignore=shutil.ignore_patterns("__pycache__"))
    compiler = package / "autoperfect/generate/compiler.py"
    compiler.write_text(compiler.read_text() + "\n# a change\n")
    work = fork(ran, tmp_path)
    before = summary_status(work)
    after = summary_status(work, PYTHONPATH=str(package))
    for op in ("scale_add", "rms"):
        assert before[f"results/{op}/cpu/candidates"] == "ok"
        assert after[f"results/{op}/cpu/candidates"] == "params changed"


PLANTED = {"planted": 2, "caught": 2, "baseline_caught": 1, "mutants": [
    {"class": "off_by_one", "judge": {"caught": True}, "baseline": {"caught": True}},
    {"class": "race", "judge": {"caught": True}, "baseline": {"caught": False}}]}


def test_the_report_picks_up_planted_bugs_without_forcerun(ran, tmp_path):
    """`snakemake mutants` writes mutants.json (stood in for here: planting takes minutes); the next
    `snakemake all` reruns the report, and nothing else, which then shows them."""
    work = fork(ran, tmp_path)
    (work / "results/rms/cpu/mutants.json").write_text(json.dumps(PLANTED))
    dry = snakemake(work, "all", "-n")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert {line.split()[1] for line in dry.stdout.splitlines() if line.startswith("rule ")} == {
        "report:", "all:"}
    proc = snakemake(work, "all")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| rms/cpu | 2 | 2/2 | 1/2 | – | race |" in (work / "results/report.md").read_text()
    again = snakemake(work, "all", "-n")
    assert "Nothing to be done" in again.stdout + again.stderr


def embedded(page: str, name: str):
    """A value Snakemake's HTML report embeds as JSON (`var results = {...};`)."""
    found = re.search(rf"var {name} = (?=[{{\"])", page)
    assert found, f"no {name} in the HTML report"
    return json.JSONDecoder().raw_decode(page, found.end())[0]


def test_html_report_shows_the_plots_and_each_ops_artifacts(ran, tmp_path):
    work = fork(ran, tmp_path)
    proc = snakemake(work, "--report", "results/report.html")
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = (work / "results/report.html").read_text()
    categories, results = embedded(page, "categories"), embedded(page, "results")
    plots = [f"results/plots/{name}.png" for name in ("roofline", "sizes", "speedup")]
    assert sorted(categories["Summary"]["plots"]) == plots
    for plot in plots:  # embedded, byte for byte, with a caption
        uri = results[plot]["data_uri"]
        assert uri.startswith("data:image/png;")
        assert base64.b64decode(uri.partition(",")[2]) == (work / plot).read_bytes()
        assert "<p>" in results[plot]["caption"]
    assert sorted(categories["Summary"]["report"]) == ["results/report.md", "results/summary.html"]
    summary = base64.b64decode(results["results/summary.html"]["data_uri"].partition(",")[2]).decode()
    assert "<td>rms</td>" in summary and summary.count("data:image/png;base64,") == len(plots)
    for op in ("scale_add", "rms"):
        assert sorted(categories[op]["cpu"]) == [f"results/{op}/cpu/bench.json",
                                                 f"results/{op}/cpu/validation.json"]
        assert sorted(categories[op]["compiler"]) == [f"results/{op}/kernels.json", f"results/{op}/regions.json"]
        assert f"{op}</tt>" in results[f"results/{op}/regions.json"]["caption"]  # wildcards filled in
    description = embedded(page, "workflow_desc")
    assert "<tt class=\"docutils literal\">scale_add</tt>, <tt class=\"docutils literal\">rms</tt>" in description
