"""The CLI on a PostgreSQL knowledge base: a folder holding only ``glassrag.toml``.

Such a folder has no ``glassrag.db``: whether the knowledge base exists is the store's
question, not the file system's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import postgres_kb_dir


def _cli(kb_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "glassrag", *args, "--kb", str(kb_dir)],
                          capture_output=True, text=True, timeout=120)


def test_ingest_on_one_folder_is_found_from_another(pg_dsn: str, tmp_path: Path) -> None:
    writer = postgres_kb_dir(tmp_path / "writer", pg_dsn)
    reader = postgres_kb_dir(tmp_path / "reader", pg_dsn)
    note = tmp_path / "otters.md"
    note.write_text("# Otters\n\nOtters hold hands while they sleep.\n", encoding="utf-8")
    done = _cli(writer, "ingest", str(note), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == 1
    found = _cli(reader, "search", "otters sleep", "--json")
    assert found.returncode == 0, found.stderr
    assert [h["doc_id"] for h in json.loads(found.stdout)["hits"]] == ["otters.md"]


def test_missing_path_on_an_existing_knowledge_base_is_an_ingest_failure(
        pg_dsn: str, tmp_path: Path) -> None:
    kb_dir = postgres_kb_dir(tmp_path / "kb", pg_dsn)
    note = tmp_path / "a.md"
    note.write_text("# A\n\nalpha\n", encoding="utf-8")
    assert _cli(kb_dir, "ingest", str(note)).returncode == 0
    missing = tmp_path / "no-such-folder"
    done = _cli(kb_dir, "ingest", str(missing), "--json")
    assert done.returncode == 1, done.stderr
    # The knowledge base exists (in the database): nothing says it was not created.
    assert "no knowledge base was created" not in done.stderr
    report = json.loads(done.stdout)
    assert [f["path"] for f in report["failed"]] == [str(missing)]
