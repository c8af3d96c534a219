"""Where the bundled examples live, in a checkout and in an installed wheel."""

from __future__ import annotations

from pathlib import Path


def examples_dir() -> Path:
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "_examples", package.parents[1] / "examples"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("the bundled examples are missing from this installation")
