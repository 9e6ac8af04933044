"""The LLM loop with the real anthropic SDK against a local Messages API (scripts/mock_anthropic.py):
a reply that does not compile, one the judge rejects, then a correct one; malformed replies and
failed calls; budgets; best-of-N; replay; the playbook. Last, the issue's acceptance: the workflow
with provider anthropic records all three outcomes for every op, and the key appears nowhere."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from autoperfect import backends
from autoperfect.backends.cfamily import Schedule
from autoperfect.generate import provider, prompts
from autoperfect.generate.lessons import Playbook
from autoperfect.generate.loop import Context, LoopSettings, Session, baseline, run_kernel
from autoperfect.judge import Settings
from autoperfect.pipeline import front
from autoperfect.spec import parse_op

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from mock_anthropic import (MockAnthropic, Step, answer, champion_cycle, scripted,  # noqa: E402
                            semantic_change, syntax_error)

KEY = "sk-ant-test-acceptance-7e57"
SPEC = parse_op("rms", {"fn": "def rms(x, w):\n    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True)"
                              " + 1e-6) * w\n",
                        "inputs": {"x": {"shape": [16, 40]}, "w": {"shape": [40]}}})
# a correct kernel made slow on purpose: the compiler's source, spinning first (~40 ms) at the spec's
# shape, where it is timed (the judge's other shapes stay quick): far more than a busy machine's noise
SPIN = "static void spin(void) { volatile int64_t n = 0; for (int64_t i = 0; i < 50000000; i++) n += i; }\n"
FAST_CALLS = {"retries": 0, "backoff_s": 0.01, "timeout_s": 10.0}


class Job:
    """The rms kernel, its compiler source without threads (`fast`: a few microseconds a call, however
    busy the machine), and a slow but correct compiler candidate."""

    def __init__(self, root: Path):
        self.root = root
        self.kernel = next(k for k in front(SPEC).kernels if k is not None)
        be = backends.get("cpu")
        self.fast = be.render(self.kernel, Schedule("serial", threads=False))  # no thread wake-ups to time
        head = f"void {self.kernel.name}(void **bufs, const int64_t *dims, const int64_t *strides) {{\n"
        self.slow = self.fast.replace(head, SPIN + head + "  if (dims[0] == 16 && dims[1] == 40) spin();\n")
        build = be.build(self.slow, root / "cache")
        assert build.ok, build.log
        self.built = [({"variant": "slow", "provider": "compiler", "library": build.library, "file": "slow.c",
                        "attempts": [build.to_json()]}, self.slow)]

    def context(self, out: Path, **settings) -> Context:
        for d in ("prompts", "replies", "llm"):
            (out / d).mkdir(parents=True, exist_ok=True)
        fixed = {self.kernel.name: self.built[0][0]["library"]}
        return Context(SPEC, "cpu", fixed, Settings(shapes=2, hidden_draws=1), self.root / "cache",
                       prompts.TEMPLATES, out / "prompts", out / "replies", out / "llm",
                       LoopSettings(**{"timing_repeats": 11, **settings}))


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Job:
    return Job(tmp_path_factory.mktemp("job"))


@pytest.fixture(scope="module")
def start(job, tmp_path_factory):
    """The slow candidate, judged and timed: the first champion of the sessions below."""
    champion, judged = baseline(job.context(tmp_path_factory.mktemp("baseline")), job.kernel, job.built)
    assert judged[0]["passed"], judged
    return champion


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def test_loop_repairs_its_way_to_a_verified_faster_champion(job, start, tmp_path, key):
    steps = [Step(text=answer(syntax_error(job.fast), "dropped a brace")),
             Step(text=answer(semantic_change(job.fast), "added one")),
             Step(text=answer(job.fast, "no spin before the rows"))]
    playbook = Playbook()
    with MockAnthropic(scripted(steps)) as mock:
        chat = provider("anthropic", {"base_url": mock.url, "model": "claude-test", **FAST_CALLS})
        session = Session(job.context(tmp_path, drafts=1, rounds=1, repairs=2), job.kernel, chat, playbook,
                          replace(start))
        session.loop()
    loop, offered = session.to_json(), [session.offer()]
    turns = loop["turns"]
    assert [t["outcome"] for t in turns] == ["compile_error", "rejected", "verified"]
    assert re.search(r"kernel\.c:\d+:\d+: error", turns[0]["feedback"])
    assert re.search(r"output 0 element \[\d+, \d+\] .*expected .*, got ", turns[1]["feedback"])
    assert turns[2]["profile"]["speedup"]["ci95"][0] > 1, turns[2]["profile"]
    assert loop["champion"]["variant"] == turns[2]["variant"] == "llm_loop_r0_d0_t2", loop["rounds"]
    assert [o["variant"] for o in offered] == ["llm_loop_r0_d0_t2"] and offered[0]["ok"]
    assert (tmp_path / offered[0]["file"]).read_text() == job.fast
    # every prompt is kept, and is what the server received; repairs carry what went wrong
    sent = [(tmp_path / t["prompt"]).read_text() for t in turns]
    assert [r["body"]["messages"][0]["content"] for r in mock.requests] == sent
    assert turns[0]["feedback"] in sent[1] and turns[1]["feedback"] in sent[2]
    assert "```c\n" + syntax_error(job.fast) + "```" in sent[1]
    # tokens and cost add up; the lesson was learned from a verified speedup
    assert loop["input_tokens"] == sum(len(p) // 4 for p in sent) and loop["calls"] == 3
    assert loop["cost_usd"] == pytest.approx((loop["input_tokens"] * 3 + loop["output_tokens"] * 15) / 1e6)
    assert [lesson.change for lesson in playbook.lessons] == ["no spin before the rows"]
    # a replay of the recorded replies, without the server, tells the same story
    replay = provider("replay", {"replies": str(tmp_path / "replies")})
    again = Session(job.context(tmp_path / "again", drafts=1, rounds=1, repairs=2), job.kernel, replay,
                    Playbook(), replace(start))
    again.loop()
    assert [t["outcome"] for t in again.turns] == ["compile_error", "rejected", "verified"]
    assert again.champion.variant == "llm_loop_r0_d0_t2"
    assert KEY not in "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".so")


def test_malformed_replies_and_failed_calls_end_in_records(job, start, tmp_path, key):
    steps = [Step(text="I would rather explain the kernel in words."),
             Step(text=answer("print('hello')\n", "python instead", language="python")),
             Step(text=answer("#include <stdio.h>\n" + job.fast, "printf debugging")),
             Step(500, body='{"type": "error", "error": {"type": "api_error", "message": "down"}}')]
    with MockAnthropic(scripted(steps)) as mock:
        chat = provider("anthropic", {"base_url": mock.url, **FAST_CALLS})
        session = Session(job.context(tmp_path, repairs=5, rounds=2), job.kernel, chat, Playbook(),
                          replace(start))
        session.loop()
    turns = session.to_json()["turns"]
    assert [t["outcome"] for t in turns] == ["no_code", "no_code", "refused", "provider_error"]
    assert [t["reason"] for t in turns[:2]] == ["the reply has no fenced code block",
                                                "the first code block is tagged 'python'; expected 'c'"]
    assert "stdio.h" in turns[2]["reason"] and "build" not in turns[2]
    assert session.stopped.startswith("provider error: HTTP 500")
    assert session.champion.variant == "slow" and session.offer() is None
    second = (tmp_path / turns[1]["prompt"]).read_text()
    assert "failed: the reply has no fenced code block" in second


def test_budget_stops_the_loop(job, start, tmp_path, key):
    broken = Step(text=answer(syntax_error(job.fast), "broken"))
    with MockAnthropic(scripted([broken] * 3)) as mock:
        chat = provider("anthropic", {"base_url": mock.url, **FAST_CALLS})
        session = Session(job.context(tmp_path, repairs=9, max_calls=2), job.kernel, chat, Playbook(),
                          replace(start))
        session.loop()
    assert session.calls == 2 and len(mock.requests) == 2
    assert session.stopped == "call budget spent (2 of 2)"


def test_compare_mode_gives_best_of_n_the_loops_calls_and_first_prompt(job, tmp_path, key):
    good = Step(text=answer(job.fast, "no spin"))
    with MockAnthropic(scripted([good, good])) as mock:
        chat = provider("anthropic", {"base_url": mock.url, **FAST_CALLS})
        log, offered = run_kernel(job.context(tmp_path, mode="compare", drafts=1, rounds=1, repairs=0),
                                  job.kernel, chat, Playbook(), job.built)
    assert log["comparison"]["calls"] == {"loop": 1, "best_of_n": 1}
    speedups = log["comparison"]["speedup_over_compiler"]
    assert speedups["loop"]["ci95"][0] > 1 and speedups["best_of_n"]["ci95"][0] > 1
    first = [(tmp_path / log[m]["turns"][0]["prompt"]).read_text() for m in ("loop", "best_of_n")]
    assert first[0] == first[1]  # blind samples of the loop's own first prompt
    assert {o["variant"] for o in offered} == {"llm_loop_r0_d0_t0", "llm_bon_s0_t0"}


@pytest.mark.parametrize("verdict, ci95, change, kept", [
    ({"passed": True}, [1.1, 1.3], "fused passes", True),
    ({"passed": False}, [1.1, 1.3], "fused passes", False),
    ({"passed": True}, [0.9, 1.3], "fused passes", False),
    ({"passed": True}, [1.1, 1.3], "", False),
])
def test_playbook_keeps_only_verified_speedups(tmp_path, verdict, ci95, change, kept):
    book = Playbook()
    lesson = book.learn(change, "row", verdict, {"median": 1.2, "ci95": ci95}, "rms", "k_1", "llm_x")
    assert (lesson is not None) == kept and len(book.lessons) == kept
    book.save(tmp_path / "playbook.json")
    assert Playbook.load(tmp_path / "playbook.json").lessons == book.lessons
    if kept:
        assert book.for_prompt("row") == ["fused passes (1.20x on a row kernel of op rms)"]


# -- the acceptance of issue 6: the workflow, provider anthropic, a local server -------------------------

WORKFLOW = ("Snakefile", "rules", "scripts", "schemas", "prompts")
CONFIG = """\
backends: [cpu]
generator: {{provider: {provider}, base_url: "{url}", drafts: 1, rounds: 1, repairs: 2, timing_repeats: 5,
             retries: 1, backoff_s: 0.01}}
judge: {{shapes: 1, hidden_draws: 1}}
ops:
  scale_add:
    fn: |
      def scale_add(x, y):
          return x * 2.0 + y
    inputs:
      x: {{shape: [64, 33]}}
      y: {{shape: [33]}}
  rms:
    fn: |
      def rms(x, w):
          return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w
    inputs:
      x: {{shape: [16, 40]}}
      w: {{shape: [40]}}
"""
OPS = ("scale_add", "rms")


def workflow(dest: Path, provider_name: str, url: str = "") -> Path:
    dest.mkdir(parents=True)
    for name in WORKFLOW:
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dest / name)
    (dest / "config.yaml").write_text(CONFIG.format(provider=provider_name, url=url))
    return dest


def snakemake(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    env = {**env, "AUTOPERFECT_CACHE": str(cwd / ".cache")}
    return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def without_key() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}


def test_acceptance_every_op_records_the_three_outcomes_and_no_key(tmp_path):
    with MockAnthropic(champion_cycle()) as mock:
        work = workflow(tmp_path / "w", "anthropic", mock.url)
        targets = [f"results/{op}/cpu/llm.json" for op in OPS]
        proc = snakemake(work, {**without_key(), "ANTHROPIC_API_KEY": KEY}, *targets)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for op in OPS:
        summary = json.loads((work / f"results/{op}/cpu/llm.json").read_text())
        assert summary["provider"] == "anthropic"
        assert summary["totals"]["calls"] == 3 * len(summary["kernels"])
        for entry in summary["kernels"].values():
            turns = json.loads((work / f"results/{op}/cpu" / entry["log"]).read_text())["loop"]["turns"]
            assert [t["outcome"] for t in turns] == ["compile_error", "rejected", "verified"], op
            assert re.search(r"element \[\d+, \d+\].*expected", turns[1]["feedback"])
            for t in turns:
                assert (work / f"results/{op}/cpu" / t["prompt"]).is_file()
                assert (work / f"results/{op}/cpu" / t["reply"]).is_file()
    leaks = [p for d in ("results", ".snakemake") for p in (work / d).rglob("*")
             if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaks == []
    assert len(mock.requests) == 6 and all(
        any(KEY in v for v in r["headers"].values()) for r in mock.requests)  # the key did travel


def test_default_provider_needs_no_key_and_has_no_llm_stage(tmp_path):
    work = workflow(tmp_path / "w", "compiler")
    proc = snakemake(work, without_key(), "all", "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rule validate:" in proc.stdout and "rule llm:" not in proc.stdout


def test_anthropic_without_a_key_stops_before_any_job(tmp_path):
    work = workflow(tmp_path / "w", "anthropic", "http://127.0.0.1:9")
    proc = snakemake(work, without_key(), "all", "-n")
    assert proc.returncode != 0 and "ANTHROPIC_API_KEY" in proc.stdout + proc.stderr
    (work / ".env").write_text(f"ANTHROPIC_API_KEY={KEY}\n")
    proc = snakemake(work, without_key(), "all", "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rule llm:" in proc.stdout
