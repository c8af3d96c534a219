"""Where the bundled examples live, in a checkout and in an installed wheel."""

from __future__ import annotations

from pathlib import Path


def examples_dir() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "_examples", here.parent.parent / "examples"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("the bundled examples are missing from this installation")
