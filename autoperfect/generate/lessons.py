"""The playbook: lessons a model's changes taught, kept only when the judge verified the kernel and
the timer measured a speedup whose whole 95% interval is above 1. Later prompts show them.

A lesson is the model's own one-line description of its change (the prompt asks for a `CHANGE:`
line), with the evidence: the speedup, its interval, and the op and kernel it was measured on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import artifacts

SHOWN = 8  # lessons per prompt: the strongest, those learned on the same kind of kernel first


@dataclass(frozen=True)
class Lesson:
    change: str
    kind: str                     # the kernel kind it was measured on: "elementwise" | "row"
    speedup: float
    ci95: tuple[float, float]
    op: str
    kernel: str
    variant: str

    def to_json(self) -> dict:
        return {"change": self.change, "kind": self.kind, "speedup": self.speedup, "ci95": list(self.ci95),
                "op": self.op, "kernel": self.kernel, "variant": self.variant}

    @staticmethod
    def from_json(d: dict) -> "Lesson":
        return Lesson(d["change"], d["kind"], d["speedup"], tuple(d["ci95"]), d["op"], d["kernel"],
                      d["variant"])

    def words(self) -> str:
        return f"{self.change} ({self.speedup:.2f}x on a {self.kind} kernel of op {self.op})"


class Playbook:
    def __init__(self, lessons: list[Lesson] | None = None):
        self.lessons = list(lessons or [])

    @staticmethod
    def load(path: str | Path | None) -> "Playbook":
        if path is None:
            return Playbook()
        return Playbook([Lesson.from_json(d) for d in artifacts.read_json(path)["lessons"]])

    def save(self, path: str | Path) -> None:
        artifacts.write_json(path, {"lessons": [lesson.to_json() for lesson in self.lessons]})

    def learn(self, change: str, kind: str, verdict: dict, speedup: dict, op: str, kernel: str,
              variant: str) -> Lesson | None:
        """Keep the lesson if the evidence holds: a verified kernel, a described change, and a
        speedup interval entirely above 1. Returns it, or None when it was not kept."""
        if not verdict.get("passed") or not change or speedup["ci95"][0] <= 1.0:
            return None
        lesson = Lesson(change, kind, speedup["median"], tuple(speedup["ci95"]), op, kernel, variant)
        self.lessons.append(lesson)
        return lesson

    def for_prompt(self, kind: str) -> list[str]:
        ranked = sorted(self.lessons, key=lambda x: (x.kind != kind, -x.speedup, x.change))
        return [lesson.words() for lesson in ranked[:SHOWN]]
