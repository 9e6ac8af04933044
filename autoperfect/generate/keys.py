"""The Anthropic API key: read from the environment or a `.env` file at the workflow root, only.

Never from config or params (Snakemake stores params in .snakemake/metadata in plain text) and never
written anywhere: callers hold it in memory and hand it to the SDK.
"""

from __future__ import annotations

import os
from pathlib import Path

VARIABLE = "ANTHROPIC_API_KEY"


class MissingKey(RuntimeError):
    pass


def from_dotenv(path: Path, name: str = VARIABLE) -> str | None:
    """`name`'s value in a .env file (`NAME=value`, optional `export ` and quotes), or None."""
    if not path.is_file():
        return None
    for line in path.read_text().splitlines():
        key, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep and key.strip() == name:
            return value.strip().strip("'\"") or None
    return None


def read_key(root: str | os.PathLike = ".") -> str:
    key = os.environ.get(VARIABLE) or from_dotenv(Path(root) / ".env")
    if not key:
        raise MissingKey(f"generator provider 'anthropic' needs {VARIABLE} in the environment or in "
                         f"{Path(root) / '.env'} (never in config.yaml)")
    return key


def export_key(root: str | os.PathLike = ".") -> None:
    """Put a .env key into this process's environment, where Snakemake's `envvars:` checks for it
    and every job inherits it; fails with a clear message when there is none."""
    os.environ[VARIABLE] = read_key(root)
