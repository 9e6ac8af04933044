"""The `replay` provider: serves the replies an `anthropic` run recorded, so a run is reproduced
without a key or a network. Replies are found by kernel and call name, not by prompt text: prompts
carry timings, which differ between runs; a changed prompt is noted on the reply, not refused."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

from .. import artifacts
from . import Reply, Request


def recording(kernel: str, call: str) -> str:
    """The file name of one recorded reply under results/{op}/{backend}/replies/."""
    return f"{kernel}.{call}.json"


def record(directory: Path, request: Request, reply: Reply) -> str:
    path = Path(directory) / recording(request.kernel, request.call)
    artifacts.write_json(path, {"kernel": request.kernel, "call": request.call,
                                "prompt_sha256": prompt_digest(request.prompt), "reply": reply.to_json()})
    return path.name


def prompt_digest(prompt: str) -> str:
    return hashlib.sha256(prompt.encode()).hexdigest()


class ReplayProvider:
    name = "replay"

    def __init__(self, settings: dict):
        self.directory = Path(settings["replies"])

    def complete(self, request: Request) -> Reply:
        path = self.directory / recording(request.kernel, request.call)
        if not path.is_file():
            return Reply(error=f"no recorded reply for call {request.call} of {request.kernel} in "
                               f"{self.directory}")
        recorded = artifacts.read_json(path)
        reply = Reply.from_json(recorded["reply"])
        same = recorded["prompt_sha256"] == prompt_digest(request.prompt)
        note = {"outcome": "replayed", "same_prompt": same, "wait_s": None}
        return replace(reply, attempts=reply.attempts + (note,))
