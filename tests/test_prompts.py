"""Prompts: every kernel of the op table renders with its ABI and its math; the same inputs give the
same bytes in any process; judge findings reach a prompt only from public checks; no key and no
machine path ever does."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys

import pytest

from autoperfect import backends, canon, fuse, kernel_ir
from autoperfect.generate import prompts
from autoperfect.kernel_ir import KernelIR

from op_table import CASES, CONFIG, trace_case


def lowered(cases) -> dict[str, KernelIR]:
    out = {}
    for case in cases:
        p = fuse.fuse(canon.canonicalize(trace_case(case)))
        out.update((k.name, k) for k in (kernel_ir.lower(p, r) for r in p.regions if r.kind == "kernel"))
    return out


KERNELS = lowered(CASES)
CONFIG_KERNELS = lowered(CONFIG)
VERDICT = {"passed": False,
           "reason": "shapes {'x': [3, 7]}, inputs 'tiny': output 0 element [2, 5] (row [2]) of shape "
                     "[3, 7]: expected 1.5, got 2.5, allowed error 1e-07"}


def context(k: KernelIR, **extra) -> dict:
    source = "/* the champion */\n"
    if k.name in CONFIG_KERNELS:
        source = backends.get("cpu").render(k)
    return {"kernel": prompts.kernel_facts(k), "backend": prompts.backend_facts("cpu"),
            "champion": {"variant": "rows", "source": source, "profile": "median 1.0 us"},
            "lessons": ["fused the two passes (1.40x on a row kernel of op rms)"], **extra}


def attempt(feedback: str) -> dict:
    return {"attempt": {"variant": "llm_loop_r0_d0_t0", "outcome": "the judge rejected it",
                        "feedback": feedback, "source": "void f(void) {}\n"}}


HISTORY = {"history": [{"variant": "llm_loop_r0_d0_t1", "outcome": "the judge verified it",
                        "change": "split rows across threads", "profile": "1.10x the champion"}]}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_table_kernel_renders_its_abi_and_math(name):
    k = KERNELS[name]
    text = prompts.render(prompts.TEMPLATES, "cpu", "draft", context(k))
    assert f"void {k.name}(void **bufs, const int64_t *dims, const int64_t *strides)" in text
    for a, arg in enumerate(k.args):
        assert f"bufs[{a}] `{arg.name}`: {'input' if arg.role == 'in' else 'output'}, {arg.dtype}" in text
    for ins in k.body:
        head = f"- %{ins.id} ({ins.space}, {ins.dtype}) = "
        line = next(x for x in text.splitlines() if x.startswith(head))
        assert all(f"%{s}" in line for s in ins.srcs), line  # the math names every operand
        assert "Op." not in line and "None" not in line, line
    assert "```c\n/* the champion */\n```" in text or "```c\n#include <stdint.h>" in text


def test_every_instruction_has_words():
    ops = {i.op for k in KERNELS.values() for i in k.body}
    assert len(ops) > 30  # the table reaches most of the op set
    for k in KERNELS.values():
        for ins in k.body:
            text = prompts.words(k, ins)
            assert text and not text.startswith(("load(", "store(", "const("))


RENDER_ALL = """
import hashlib, sys
sys.path.insert(0, "tests")
from test_prompts import CONFIG_KERNELS, HISTORY, VERDICT, attempt, context
from autoperfect.generate import prompts
h = hashlib.sha256()
for name in sorted(CONFIG_KERNELS):
    k = CONFIG_KERNELS[name]
    for turn, extra in (("draft", {}), ("repair", attempt(VERDICT["reason"])), ("improve", HISTORY)):
        h.update(prompts.render(prompts.TEMPLATES, "cpu", turn, context(k, **extra)).encode())
print(h.hexdigest())
"""


def test_same_inputs_render_the_same_bytes_in_any_process():
    digests = set()
    for seed in ("0", "1"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-c", RENDER_ALL], capture_output=True, text=True, env=env,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        assert proc.returncode == 0, proc.stderr[-2000:]
        digests.add(proc.stdout.strip())
    h = hashlib.sha256()
    for name in sorted(CONFIG_KERNELS):
        k = CONFIG_KERNELS[name]
        for turn, extra in (("draft", {}), ("repair", attempt(VERDICT["reason"])), ("improve", HISTORY)):
            h.update(prompts.render(prompts.TEMPLATES, "cpu", turn, context(k, **extra)).encode())
    assert digests == {h.hexdigest()}


def test_repair_prompt_holds_the_located_error_and_the_attempt():
    k = next(iter(CONFIG_KERNELS.values()))
    text = prompts.render(prompts.TEMPLATES, "cpu", "repair", context(k, **attempt(
        prompts.verdict_feedback(VERDICT))))
    assert VERDICT["reason"] in text
    assert "```c\nvoid f(void) {}\n```" in text
    assert text.index("## The current champion") < text.index("Your previous attempt")


def test_improve_prompt_asks_for_one_structural_change_after_the_last_round():
    k = next(iter(CONFIG_KERNELS.values()))
    text = prompts.render(prompts.TEMPLATES, "cpu", "improve", context(k, **HISTORY))
    assert "llm_loop_r0_d0_t1: the judge verified it; change: split rows across threads; 1.10x" in text
    assert "exactly one structural change" in text
    assert "fused the two passes (1.40x" in text  # the playbook's lessons


def test_hidden_draws_never_reach_a_prompt():
    """A hidden failure is one generic sentence: nothing the judge saw on withheld inputs."""
    hidden = {"passed": False, "reason": "failed on a hidden draw: element [7] expected 31.4159 got 2.71828",
              "hidden": {"draws": 3, "failed": 1}, "shapes": [{"status": "checked"}]}
    feedback = prompts.verdict_feedback(hidden)
    assert feedback == prompts.HIDDEN
    k = next(iter(CONFIG_KERNELS.values()))
    text = prompts.render(prompts.TEMPLATES, "cpu", "repair", context(k, **attempt(feedback)))
    for leaked in ("31.4159", "2.71828", "element [7]"):
        assert leaked not in text
    assert prompts.verdict_feedback(VERDICT) == VERDICT["reason"]  # public findings go through as they are


def test_build_logs_lose_machine_paths(tmp_path):
    source = "void k(void) { oops }\n"
    build = backends.get("cpu").build(source, tmp_path)
    assert not build.ok and str(tmp_path) in build.log
    feedback = prompts.build_feedback(build.log)
    assert str(tmp_path) not in feedback and re.search(r"kernel\.c:1:\d+: error", feedback)


def test_no_key_in_any_prompt(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-in-a-prompt")
    for k in CONFIG_KERNELS.values():
        for turn, extra in (("draft", {}), ("repair", attempt("x")), ("improve", HISTORY)):
            assert "sk-ant-never" not in prompts.render(prompts.TEMPLATES, "cpu", turn, context(k, **extra))


def test_a_template_missing_a_value_fails_loudly():
    k = next(iter(CONFIG_KERNELS.values()))
    with pytest.raises(Exception, match="attempt"):
        prompts.render(prompts.TEMPLATES, "cpu", "repair", context(k))
    with pytest.raises(ValueError, match="unknown prompt turn"):
        prompts.template_name("cpu", "chat")
