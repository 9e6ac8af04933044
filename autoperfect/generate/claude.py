"""The `anthropic` provider: Claude through the official SDK, one prompt per request.

Retries are ours, not the SDK's (it is built with max_retries=0), so every try is recorded: 408,
409, 429 and 5xx answers, timeouts and dropped connections are retried after `backoff_s`, doubled
each time (or the server's retry-after, up to a minute); anything else ends the call at once. A
failed call is a Reply with `error` set, never an exception, and no text built here holds the key.
"""

from __future__ import annotations

import time

from . import Reply, Request
from .keys import read_key

RETRYABLE = (408, 409, 429)
MAX_WAIT_S = 60.0
DEFAULTS = {"model": "claude-sonnet-4-6", "max_tokens": 8192, "temperature": None, "timeout_s": 300.0,
            "retries": 4, "backoff_s": 2.0, "base_url": None, "root": "."}


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, settings: dict):
        self.settings = {**DEFAULTS, **{k: v for k, v in settings.items() if k in DEFAULTS}}
        self._key = read_key(self.settings["root"])
        self._client = None

    def client(self):
        import anthropic

        if self._client is None:  # base_url None: the SDK reads ANTHROPIC_BASE_URL, else Anthropic's
            self._client = anthropic.Anthropic(api_key=self._key, base_url=self.settings["base_url"],
                                               timeout=self.settings["timeout_s"], max_retries=0)
        return self._client

    def complete(self, request: Request) -> Reply:
        s = self.settings
        extra = {} if s["temperature"] is None else {"extra_body": {"temperature": s["temperature"]}}
        attempts: list[dict] = []
        for n in range(s["retries"] + 1):
            try:
                message = self.client().messages.create(
                    model=s["model"], max_tokens=s["max_tokens"],
                    messages=[{"role": "user", "content": request.prompt}], **extra)
                return self._reply(message, attempts)
            except Exception as e:  # the SDK's errors, and whatever a malformed answer raises
                outcome, wait = self._failure(e, n)
            attempts.append({"outcome": outcome, "wait_s": wait})
            if wait is None:
                break
            time.sleep(wait)
        return Reply(model=s["model"], error=attempts[-1]["outcome"], attempts=tuple(attempts))

    def _failure(self, e: Exception, n: int) -> tuple[str, float | None]:
        """What went wrong, in words without the key, and how long to wait before the next try
        (None: don't retry)."""
        import anthropic

        s = self.settings
        backoff = s["backoff_s"] * 2 ** n if n < s["retries"] else None
        if isinstance(e, anthropic.APITimeoutError):
            return f"timed out after {s['timeout_s']} s", backoff
        if isinstance(e, anthropic.APIConnectionError):
            return self._scrub(f"connection failed: {e}"), backoff
        if isinstance(e, anthropic.APIStatusError):
            outcome = self._scrub(f"HTTP {e.status_code}: {e.message}")[:500]
            if (e.status_code in RETRYABLE or e.status_code >= 500) and backoff is not None:
                return outcome, min(_retry_after(e.response.headers) or backoff, MAX_WAIT_S)
            return outcome, None
        return self._scrub(f"malformed reply ({type(e).__name__}: {e})")[:500], None

    def _reply(self, message, attempts: list[dict]) -> Reply:
        content = getattr(message, "content", None)
        if not isinstance(content, list):
            attempts.append({"outcome": "malformed reply: no content", "wait_s": None})
            return Reply(model=self.settings["model"], error="malformed reply: no content",
                         attempts=tuple(attempts))
        attempts.append({"outcome": "ok", "wait_s": None})
        usage = getattr(message, "usage", None)
        return Reply(text="".join(getattr(b, "text", "") or "" for b in content),
                     model=message.model or self.settings["model"],
                     input_tokens=getattr(usage, "input_tokens", 0) or 0,
                     output_tokens=getattr(usage, "output_tokens", 0) or 0,
                     stop_reason=message.stop_reason, attempts=tuple(attempts))

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "[key]")


def _retry_after(headers) -> float | None:
    """The server's requested wait in seconds (`retry-after-ms` or numeric `retry-after`)."""
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        try:
            return float(headers.get(name)) * scale
        except (TypeError, ValueError):
            continue
    return None
