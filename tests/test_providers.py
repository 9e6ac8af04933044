"""Providers: the real anthropic SDK against a local Messages API (scripts/mock_anthropic.py) on
127.0.0.1, the replay provider, reading replies, and the key's handling."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autoperfect.generate import Reply, Request, provider, replies
from autoperfect.generate.keys import MissingKey, from_dotenv
from autoperfect.generate.replay import record

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from mock_anthropic import MockAnthropic, Step, answer, scripted  # noqa: E402

KEY = "sk-ant-test-5f1c0ffee"
FAST = {"retries": 2, "backoff_s": 0.01, "timeout_s": 5.0}
REQUEST = Request("k_0123456789abcdef", "loop.r0.d0.t0", "write a kernel")


def error(status: int, kind: str = "api_error", message: str = "boom") -> Step:
    return Step(status, body=json.dumps({"type": "error", "error": {"type": kind, "message": message}}))


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    return KEY


def ask(mock: MockAnthropic, **settings) -> Reply:
    chat = provider("anthropic", {"base_url": mock.url, **FAST, **settings})
    return chat.complete(REQUEST)


def test_reply_text_tokens_and_request(key):
    with MockAnthropic(scripted([Step(text=answer("int x;\n", "none"))])) as mock:
        reply = ask(mock, model="claude-test", max_tokens=1000)
    assert reply.error is None and "int x;" in reply.text
    assert (reply.input_tokens, reply.output_tokens) == (len(REQUEST.prompt) // 4, len(reply.text) // 4)
    [req] = mock.requests
    assert req["path"] == "/v1/messages"
    assert req["body"]["model"] == "claude-test" and req["body"]["max_tokens"] == 1000
    assert req["body"]["messages"] == [{"role": "user", "content": REQUEST.prompt}]
    assert "temperature" not in req["body"]
    assert any(KEY in v for v in req["headers"].values())  # the key did reach the server
    assert KEY not in json.dumps(reply.to_json())


def test_temperature_is_sent_only_when_set(key):
    with MockAnthropic(scripted([Step(text="x")])) as mock:
        ask(mock, temperature=0.25)
    assert mock.requests[0]["body"]["temperature"] == 0.25


@pytest.mark.parametrize("status, kind", [(429, "rate_limit_error"), (500, "api_error"),
                                          (529, "overloaded_error")])
def test_retryable_answers_are_retried_with_backoff(key, status, kind):
    with MockAnthropic(scripted([error(status, kind), error(status, kind), Step(text="ok")])) as mock:
        reply = ask(mock)
    assert reply.error is None and reply.text == "ok"
    assert [a["outcome"][:8] for a in reply.attempts] == [f"HTTP {status}"] * 2 + ["ok"]
    assert [a["wait_s"] for a in reply.attempts] == [0.01, 0.02, None]
    assert len(mock.requests) == 3


def test_retry_after_header_sets_the_wait(key):
    slow_down = Step(429, body='{"type": "error"}', headers={"retry-after-ms": "30"})
    with MockAnthropic(scripted([slow_down, Step(text="ok")])) as mock:
        reply = ask(mock)
    assert reply.attempts[0]["wait_s"] == pytest.approx(0.03)


def test_exhausted_retries_end_in_an_error_reply(key):
    with MockAnthropic(scripted([error(500)] * 3)) as mock:
        reply = ask(mock)
    assert reply.text == "" and reply.error.startswith("HTTP 500")
    assert len(reply.attempts) == 3 and reply.attempts[-1]["wait_s"] is None


def test_timeout_is_retried_then_recorded(key):
    late = Step(text="too late", delay_s=1.0)
    with MockAnthropic(scripted([late, late])) as mock:
        start = time.perf_counter()
        reply = ask(mock, timeout_s=0.2, retries=1)
        elapsed = time.perf_counter() - start
    assert reply.error == "timed out after 0.2 s"
    assert [a["outcome"] for a in reply.attempts] == ["timed out after 0.2 s"] * 2
    assert elapsed < 1.5


@pytest.mark.parametrize("status", [400, 401, 403])
def test_client_errors_are_not_retried_and_never_echo_the_key(key, status):
    with MockAnthropic(scripted([error(status, message=f"bad key {KEY}")])) as mock:
        reply = ask(mock)
    assert len(mock.requests) == 1 and reply.error.startswith(f"HTTP {status}")
    assert KEY not in json.dumps(reply.to_json()) and "[key]" in reply.error


@pytest.mark.parametrize("body, words", [("not json at all", "malformed reply"),
                                         ('{"type": "message"}', "malformed reply: no content")])
def test_malformed_answers_end_in_an_error_reply(key, body, words):
    with MockAnthropic(scripted([Step(body=body)])) as mock:
        reply = ask(mock)
    assert reply.error.startswith(words) and reply.text == ""


def test_base_url_from_the_environment(key, monkeypatch):
    with MockAnthropic(scripted([Step(text="from env")])) as mock:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", mock.url)
        reply = provider("anthropic", FAST).complete(REQUEST)
    assert reply.text == "from env"


def test_missing_key_names_where_it_is_read(monkeypatch, tmp_path):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingKey, match=r"ANTHROPIC_API_KEY .*\.env"):
        provider("anthropic", {"root": str(tmp_path)})


def test_key_from_dotenv_at_the_root(monkeypatch, tmp_path):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    (tmp_path / ".env").write_text(f"# secrets\nOTHER=1\nexport ANTHROPIC_API_KEY='{KEY}'\n")
    assert from_dotenv(tmp_path / ".env") == KEY
    with MockAnthropic(scripted([Step(text="ok")])) as mock:
        reply = provider("anthropic", {"root": str(tmp_path), "base_url": mock.url, **FAST}).complete(REQUEST)
    assert reply.text == "ok" and any(KEY in v for v in mock.requests[0]["headers"].values())


# -- replay --------------------------------------------------------------------------------------------


def test_replay_serves_what_was_recorded(tmp_path):
    recorded = Reply("```c\nint y;\n```", "claude-test", 10, 3, "end_turn", None, ({"outcome": "ok"},))
    record(tmp_path, REQUEST, recorded)
    chat = provider("replay", {"replies": str(tmp_path)})
    same = chat.complete(REQUEST)
    assert (same.text, same.input_tokens, same.output_tokens) == (recorded.text, 10, 3)
    assert same.attempts[-1] == {"outcome": "replayed", "same_prompt": True, "wait_s": None}
    changed = chat.complete(Request(REQUEST.kernel, REQUEST.call, "another prompt"))
    assert changed.text == recorded.text and changed.attempts[-1]["same_prompt"] is False
    missing = chat.complete(Request(REQUEST.kernel, "loop.r9.d0.t0", "x"))
    assert missing.error.startswith("no recorded reply for call loop.r9.d0.t0")


def test_unknown_provider_is_named():
    with pytest.raises(ValueError, match="unknown generator provider 'gpt'"):
        provider("gpt")


# -- reading replies -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, source, why", [
    ("```c\nint a;\n```\nCHANGE: x", "int a;\n", None),
    ("text\n```\nint b;\n```", "int b;\n", None),
    ("```C\nint c;\n```\n```python\nx = 1\n```", "int c;\n", None),
    ("no code at all", None, "the reply has no fenced code block"),
    ("```python\nprint(1)\n```", None, "the first code block is tagged 'python'; expected 'c'"),
    ("```c\n\n```", None, "the first code block is empty"),
    ("```c\nint truncated;\n", None, "the reply has no fenced code block"),
])
def test_first_code_block_is_the_candidate(text, source, why):
    assert replies.code_block(text, "cpu") == (source, why)


def test_change_note():
    text = "```c\n```\nCHANGE: split rows across threads\n"
    assert replies.change_note(text) == "split rows across threads"
    assert replies.change_note("**CHANGE:** fused the two passes") == "fused the two passes"
    assert replies.change_note("no note") == ""


def test_offline_stages_import_no_network_code(tmp_path):
    """With the compiler provider, generating imports neither the SDK nor an HTTP client."""
    code = ("import sys; from autoperfect.generate import provider; from autoperfect import stages; "
            "provider('compiler'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'httpx', 'httpx2')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_code_defaults_are_the_schemas():
    """A library user without the workflow gets what config.yaml's schema would fill in."""
    import yaml

    from autoperfect.generate.claude import DEFAULTS
    from autoperfect.generate.loop import LoopSettings

    schema = yaml.safe_load((ROOT / "schemas/config.schema.yaml").read_text())
    props = schema["properties"]["generator"]["properties"]
    default = {k: p.get("default") for k, p in props.items()}
    assert all(default[k] == v for k, v in DEFAULTS.items() if k != "root")
    loop = LoopSettings()
    assert all(default[k] == getattr(loop, k) for k in ("mode", "drafts", "rounds", "repairs", "patience",
                                                         "max_calls", "max_cost_usd", "timing_repeats"))
    prices = props["price_per_mtok"]["properties"]
    assert (loop.price_input, loop.price_output) == (prices["input"]["default"], prices["output"]["default"])
