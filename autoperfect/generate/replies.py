"""Reading a model's reply: its first fenced code block is the candidate, in the backend's
language, and one `CHANGE:` line says what the attempt changed (the playbook's lesson, if the judge
and the timer bear it out). What the source may contain is static.check's business."""

from __future__ import annotations

import re

FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+#.-]*)[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)
CHANGE = re.compile(r"^\W*CHANGE\W*?:[\s*_]*(.+)$", re.M)
LANGUAGES = {"cpu": ("c", "")}  # accepted fence tags per backend; "" is an untagged block


def code_block(text: str, backend: str) -> tuple[str | None, str | None]:
    """(source, None), or (None, why the reply holds no candidate)."""
    found = FENCE.search(text)
    if found is None:
        return None, "the reply has no fenced code block"
    language, body = found.group(1).lower(), found.group(2)
    accepted = LANGUAGES[backend]
    if language not in accepted:
        return None, f"the first code block is tagged {language!r}; expected {accepted[0]!r}"
    if not body.strip():
        return None, "the first code block is empty"
    return body, None


def change_note(text: str) -> str:
    """The one line the prompt asks for, saying what the attempt changed ("" when missing)."""
    found = CHANGE.search(text)
    return found.group(1).strip()[:300] if found else ""
