"""A local stand-in for the Anthropic Messages API, for tests and offline demonstrations.

`POST /v1/messages` is answered by a *responder*: a function from the request's JSON body to a
`Step` (status, reply text or raw body, delay, headers). Two responders come with it:

- `scripted(steps)`: the steps in order (then 500s: a test that asks for more is told so);
- `champion_cycle()`: answers each prompt with the champion's source taken from the prompt, per
  kernel in turn with a syntax error, with a semantic change, then unchanged (the acceptance of
  issue 6: a compile failure, a located judge rejection and an accepted candidate).

Every request's headers and body are kept (`requests`) so a test can check what the SDK sent.
Run it by hand with `python scripts/mock_anthropic.py --port 8765` and point
`generator.base_url` (or ANTHROPIC_BASE_URL) at the URL it prints.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

CHAMPION = re.compile(r"^#+ [^\n]*champion[^\n]*\n.*?```c\n(.*?)```", re.S | re.M | re.I)
KERNEL = re.compile(r"void (k_[0-9a-f]{16})\(")
STORE = re.compile(r"(out\d+\[[^\]]+\] = )([^;]+);")


@dataclass
class Step:
    status: int = 200
    text: str = ""
    body: str | None = None          # raw body instead of a message (malformed replies, errors)
    delay_s: float = 0.0             # sleep before answering (client timeouts)
    headers: dict = field(default_factory=dict)


def message(text: str, prompt: str, model: str) -> dict:
    """A Messages API reply; token counts are a deterministic 4 characters per token."""
    return {"id": "msg_mock", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": len(prompt) // 4, "output_tokens": len(text) // 4}}


def prompt_of(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)


def scripted(steps: list[Step]) -> Callable[[dict], Step]:
    queue = list(steps)
    lock = threading.Lock()

    def respond(body: dict) -> Step:
        with lock:
            if queue:
                return queue.pop(0)
        return Step(500, body=json.dumps({"type": "error", "error": {"type": "api_error",
                                                                      "message": "mock script exhausted"}}),
                    headers={"x-should-retry": "false"})
    return respond


def syntax_error(source: str) -> str:
    """The source without its last closing brace: it no longer compiles."""
    return source.rstrip().removesuffix("}") + "\n"


def semantic_change(source: str) -> str:
    """The source with one added to every value it stores plainly: it compiles, and the judge says
    where it is wrong. Every store, not the first: a piped row kernel's first stores are on a path
    that small rows never take (CRenderer.pipes)."""
    return STORE.sub(r"\1(\2) + 1.0f;", source)


def answer(source: str, change: str, language: str = "c") -> str:
    """A reply in the form the prompts ask for."""
    return f"Here is the kernel.\n\n```{language}\n{source}```\n\nCHANGE: {change}\n"


def champion_cycle() -> Callable[[dict], Step]:
    """Per kernel, in turn: the champion with a syntax error, with a changed result, unchanged."""
    count: dict[str, int] = {}
    lock = threading.Lock()
    turns = ((syntax_error, "dropped the closing brace"), (semantic_change, "added one to every stored value"),
             (lambda s: s, "nothing: the champion as it is"))

    def respond(body: dict) -> Step:
        found = CHAMPION.search(prompt_of(body))
        if found is None:
            return Step(text="I could not find a champion in the prompt.")
        source = found.group(1)
        kernel = KERNEL.search(source)
        name = kernel.group(1) if kernel else ""
        with lock:
            count[name] = n = count.get(name, 0) + 1
        change, words = turns[(n - 1) % 3]
        return Step(text=answer(change(source), words))
    return respond


class MockAnthropic:
    """The server on 127.0.0.1 in a thread; use as a context manager (it stops on exit)."""

    def __init__(self, respond: Callable[[dict], Step], port: int = 0):
        self.respond = respond
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's spelling)
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                body = json.loads(raw or b"{}")
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                step = server.respond(body)
                time.sleep(step.delay_s)
                text = step.body if step.body is not None else json.dumps(
                    message(step.text, prompt_of(body), body.get("model", "mock")))
                data = text.encode()
                try:
                    self.send_response(step.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in step.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "MockAnthropic":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    with MockAnthropic(champion_cycle(), args.port) as mock:
        print(f"mock Messages API at {mock.url} (champion cycle); Ctrl-C stops it", flush=True)
        try:
            mock.thread.join()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
