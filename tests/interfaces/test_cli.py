"""The CLI as a user types it: real knowledge bases in temp dirs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import EXAMPLES, REPO
from glassrag import KnowledgeBase
from glassrag.interfaces.cli.main import app

WORKSHOP = str(EXAMPLES / "workshop" / "documents.jsonl")


@pytest.fixture
def run(tmp_path: Path):
    runner = CliRunner()
    kb = str(tmp_path / "kb")

    def invoke(*args: str, kb_dir: str | None = kb):
        prefix = ["--kb", kb_dir] if kb_dir else []
        return runner.invoke(app, [*prefix, *args])

    return invoke


def test_ingest_json_report_and_search_json(run) -> None:
    result = run("ingest", WORKSHOP, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {k: report[k] for k in ("added", "updated", "unchanged", "deleted", "chunks")} == {
        "added": 4, "updated": 0, "unchanged": 0, "deleted": 0, "chunks": 4
    }
    assert report["failed"] == []
    result = run("search", "How many days do learners have for refunds?", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    hit = data["hits"][0]
    assert data["query"].startswith("How many days")
    assert set(hit) >= {"chunk_id", "doc_id", "title", "source", "line_start", "line_end",
                        "score", "matched_terms", "text"}
    assert hit["chunk_id"] == "refund-policy#1" and hit["line_start"] == 1


def test_roles_flag_widens_only_to_given_roles(run) -> None:
    run("ingest", WORKSHOP)
    public = json.loads(run("search", "private beta roadmap Q4", "--json").stdout)
    assert public["hits"] == [] and public["blocked_count"] == 1
    staff = json.loads(run("search", "private beta roadmap Q4", "--role", "employee",
                           "--json").stdout)
    assert [h["doc_id"] for h in staff["hits"]] == ["private-roadmap"]


def test_table_output_and_terms(run) -> None:
    # Seed 001's notes with seed 001's chunking rules (not the default for Markdown).
    run("ingest", str(EXAMPLES / "notes"), "--chunker", "structure")
    result = run("search", "RAG 流程", "--terms", "检索", "--terms", "片段", "--top-k", "2")
    assert result.exit_code == 0
    assert "rag.md#2" in result.stdout and "rag.md#3" in result.stdout
    assert "review.txt#1" not in result.stdout


def test_failed_files_give_nonzero_exit_and_the_rest_is_ingested(run, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "ok.md").write_text("marmot habits\n")
    (folder / "bad.jsonl").write_text('{"doc_id": "x"}\n')
    result = run("ingest", str(folder), "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["added"] == 1
    assert report["failed"][0]["path"].endswith("bad.jsonl:1")
    assert "text" in report["failed"][0]["error"]


def test_errors_have_one_json_shape_and_exit_codes(run, tmp_path: Path) -> None:
    missing = run("search", "anything", "--json", kb_dir=str(tmp_path / "none"))
    assert missing.exit_code == 3
    error = json.loads(missing.stdout)["error"]
    assert error["code"] == "kb_not_found" and error["status"] == 404
    run("ingest", WORKSHOP)
    empty = run("search", "  ", "--json")
    assert empty.exit_code == 2
    assert json.loads(empty.stdout)["error"]["code"] == "empty_query"
    stop = run("search", "what is the")
    assert stop.exit_code == 2 and "stop words" in stop.output
    gone = run("docs", "show", "nope")
    assert gone.exit_code == 3


def test_docs_commands(run) -> None:
    run("ingest", WORKSHOP)
    listed = json.loads(run("docs", "list", "--json").stdout)
    assert [d["doc_id"] for d in listed][:1] == ["refund-policy"]
    shown = json.loads(run("docs", "show", "refund-policy", "--json").stdout)
    assert shown["chunks"][0]["chunk_id"] == "refund-policy#1"
    assert shown["version"] == 1 and len(shown["content_hash"]) == 64
    assert run("docs", "rm", "office-hours").exit_code == 0
    assert len(json.loads(run("docs", "list", "--json").stdout)) == 3
    status = json.loads(run("status", "--json").stdout)
    assert status["chunks"] == status["indexed_chunks"] == 3
    assert "reindexed 3 chunks" in run("reindex").stdout


def test_init_and_analyze(run, tmp_path: Path) -> None:
    assert run("init").exit_code == 0
    assert (tmp_path / "kb" / "glassrag.toml").exists()
    analyzed = json.loads(run("analyze", "Learners were refunding 检索片段", "--json").stdout)
    assert "learner" in analyzed["tokens"] and "检索" in analyzed["tokens"]
    assert {r["analyzer"] for r in analyzed["runs"]} >= {"english", "chinese"}


def test_kb_location_env_then_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    monkeypatch.setenv("GLASSRAG_KB", str(tmp_path / "from-env"))
    assert runner.invoke(app, ["ingest", WORKSHOP]).exit_code == 0
    assert (tmp_path / "from-env" / "glassrag.db").exists()
    monkeypatch.delenv("GLASSRAG_KB")
    assert runner.invoke(app, ["ingest", WORKSHOP]).exit_code == 0
    assert (tmp_path / ".glassrag" / "glassrag.db").exists()


def test_python_dash_m_entry_point(tmp_path: Path) -> None:
    kb = str(tmp_path / "kb")
    done = subprocess.run([sys.executable, "-m", "glassrag", "--kb", kb, "ingest", WORKSHOP],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = subprocess.run(
        [sys.executable, "-m", "glassrag", "--kb", kb, "search", "API key", "--json"],
        capture_output=True, text=True, timeout=60,
    )
    assert json.loads(found.stdout)["hits"][0]["source"] == "setup.md#keys"


def test_eval_beir_and_compare(run) -> None:
    from conftest import SHARED

    xquad = SHARED / "benchmarks" / "xquad-en"
    if not xquad.exists():
        pytest.skip("the shared benchmarks are not beside this checkout")
    single = run("eval", "--beir", str(xquad), "--limit", "30", "--json", kb_dir=None)
    assert single.exit_code == 0, single.output
    [report] = json.loads(single.stdout)
    assert report["n"] == 30 and report["metrics"]["ndcg@10"] > 0.8
    both = run("eval", "--beir", str(xquad), "--limit", "30", "--compare", "hybrid",
               "--embedder", "hash:64", kb_dir=None)
    assert both.exit_code == 0, both.output
    assert "ndcg@10" in both.stdout and "hybrid" in both.stdout
    # --rerank and --fusion reach the run (it records them; the ranking changes).
    tuned = run("eval", "--beir", str(xquad), "--limit", "30", "--mode", "hybrid",
                "--embedder", "hash:64", "--fusion", "rrf", "--rerank", "lexical", "--json",
                kb_dir=None)
    assert tuned.exit_code == 0, tuned.output
    [reranked] = json.loads(tuned.stdout)
    assert (reranked["rerank"], reranked["fusion"]) == ("lexical", "rrf")
    assert reranked["metrics"]["ndcg@10"] != report["metrics"]["ndcg@10"]


def test_eval_keeps_and_reuses_the_kb_given_with_kb(run, tmp_path: Path) -> None:
    """`--kb DIR eval --beir/--qa` builds the benchmark's knowledge base in DIR and reuses it
    (no second ingest or embedding); a knowledge base holding other documents is refused."""
    from evaluate_fixtures import qa_set

    root = qa_set(tmp_path / "qa")  # a BEIR-layout set with answers: serves --beir and --qa
    kept = str(tmp_path / "bench-kb")
    first = run("eval", "--beir", str(root), "--mode", "hybrid", "--embedder", "hash:64",
                "--json", kb_dir=kept)
    assert first.exit_code == 0, first.output
    [made] = json.loads(first.stdout)
    assert (tmp_path / "bench-kb" / "glassrag.db").exists()
    assert made["ingest_seconds"] > 0 and made["embed_seconds"] > 0
    again = run("eval", "--beir", str(root), "--mode", "hybrid", "--embedder", "hash:64",
                "--compare", "hybrid,fusion=rrf", "--json", kb_dir=kept)
    assert again.exit_code == 0, again.output
    reused = json.loads(again.stdout)
    assert [r["ingest_seconds"] for r in reused] == [0.0, 0.0]
    assert {r["metrics"]["ndcg@10"] for r in reused[:1]} == {made["metrics"]["ndcg@10"]}
    with KnowledgeBase.open(Path(kept)) as kb:
        chunks = kb.status()["chunks"]
        assert kb.dense("hash:64").describe()["vectors"] == chunks  # embedded once
    qa = run("eval", "--qa", str(root), "--json", kb_dir=kept)
    assert qa.exit_code == 0, qa.output
    with KnowledgeBase.open(Path(kept)) as kb:  # the asks' traces are in the kept base
        assert kb.store.db.execute("SELECT count(*) FROM traces").fetchone()[0] >= 7
    other = str(tmp_path / "kb")
    assert run("ingest", WORKSHOP, kb_dir=other).exit_code == 0
    refused = run("eval", "--beir", str(root), "--json", kb_dir=other)
    assert refused.exit_code != 0 and "not in the corpus" in refused.output


def test_every_documented_command_is_registered() -> None:
    """The README's command table names what `glassrag --help` must offer."""
    import re

    from typer.main import get_command

    from glassrag.interfaces.cli.main import app

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split("### Commands", 1)[1].split("\n#", 1)[0]
    documented = set(re.findall(r"^\| `([a-z-]+)", table, flags=re.M))
    registered = set(get_command(app).commands)  # type: ignore[attr-defined]
    assert {"serve", "mcp", "tokens", "ingest", "ask"} <= documented
    assert documented <= registered, documented - registered


def test_kb_is_accepted_after_the_subcommand(run, tmp_path: Path) -> None:
    kb = str(tmp_path / "late")
    assert run("ingest", "--kb", kb, WORKSHOP, kb_dir=None).exit_code == 0
    found = run("search", "refund", "--json", f"--kb={kb}", kb_dir=None)
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["hits"]
    listed = run("docs", "list", "--kb", kb, "--json", kb_dir=None)
    assert len(json.loads(listed.stdout)) == 4
    assert run("tokens", "create", "--principal", "a", "--kb", kb, kb_dir=None).exit_code == 0
    # After the subcommand it wins over a --kb before it; after `--` it is an argument.
    other = run("--kb", str(tmp_path / "none"), "status", "--kb", kb, "--json", kb_dir=None)
    assert json.loads(other.stdout)["documents"] == 4
    literal = run("search", "--kb", kb, "--json", "--", "--kb", kb_dir=None)
    assert literal.exit_code == 0 and json.loads(literal.stdout)["query"] == "--kb"


def test_a_mistyped_path_leaves_no_empty_knowledge_base(run, tmp_path: Path) -> None:
    result = run("ingest", str(tmp_path / "nosuch.md"), "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["failed"] == [{"path": str(tmp_path / "nosuch.md"),
                                 "error": "no such file or directory"}]
    assert report["added"] == 0 and report["default_roles"] == ["public"]
    assert not (tmp_path / "kb").exists()
    assert "no knowledge base was created" in result.stderr
    # One real path among them: the knowledge base is made and the rest goes on.
    both = run("ingest", str(tmp_path / "nosuch.md"), WORKSHOP, "--json")
    assert both.exit_code == 1 and json.loads(both.stdout)["added"] == 4
    assert (tmp_path / "kb" / "glassrag.db").exists()


@pytest.mark.parametrize(("args", "field"), [
    (["search", "--json"], "query"),
    (["search", "x", "--top-k", "many", "--json"], "--top-k"),
    (["search", "x", "--no-such-flag", "--json"], "--no-such-flag"),
    (["docs", "show", "--json"], "doc_id"),
    (["ask", "x", "--json", "--role"], "--role"),
])
def test_usage_errors_under_json_are_the_error_shape(run, args: list[str],
                                                    field: str) -> None:
    result = run(*args)
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "invalid_input" and error["status"] == 400
    assert error["details"]["field"] == field
    assert "╭" not in result.output  # no boxed text anywhere
    # Without --json: a plain message on stderr, nothing on stdout, the same exit code.
    plain = run(*[a for a in args if a != "--json"])
    assert plain.exit_code == 2 and plain.stdout == "" and "Error:" in plain.stderr


def test_bracketed_words_are_printed_as_they_are(run, tmp_path: Path) -> None:
    helps = {command: run(*command.split(), "--help", kb_dir=None).stdout
             for command in ("ingest", "serve", "ask")}
    assert "[ingest] follow_external_links" in " ".join(helps["ingest"].split())
    assert "[doc:name]" in helps["ingest"]
    assert "[server] setting" in " ".join(helps["serve"].split())
    assert "[llm] rewrite_query" in " ".join(helps["ask"].split())
    run("ingest", WORKSHOP)
    no_embedder = run("embed")
    assert no_embedder.exit_code == 2
    assert "set [dense] embedder in glassrag.toml" in " ".join(no_embedder.stderr.split())
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "plan.md").write_text("# [draft] Parking plan\n\nVisitors park on level 3.\n")
    run("ingest", str(notes))
    assert "title: [draft] Parking plan" in run("docs", "show", "plan.md").stdout
    assert "[draft]" in run("docs", "list").stdout  # a table cell is text too
    assert "[draft]" in run("search", "visitors park").stdout


def test_a_role_no_document_has_is_named(run) -> None:
    run("ingest", WORKSHOP)
    for command in (["search", "roadmap"], ["ask", "roadmap"], ["inspect", "roadmap"]):
        typo = run(*command, "--role", "employe", "--json")
        assert typo.exit_code == 0, typo.output
        json.loads(typo.stdout)  # the note is not in the JSON
        assert "no document has the role 'employe'" in typo.stderr
        known = run(*command, "--role", "employee,public")
        assert known.exit_code == 0 and "no document has" not in known.stderr


def test_one_name_per_operation_with_the_old_spellings_hidden(run, tmp_path: Path) -> None:
    assert run("ingest", WORKSHOP, "--role", "employee").exit_code == 0
    old_roles = run("ingest", str(EXAMPLES / "notes"), "--roles", "hr,finance", "--json")
    assert old_roles.exit_code == 0, old_roles.output
    shown = json.loads(run("docs", "show", "rag.md", "--json").stdout)
    assert sorted(shown["roles"]) == ["finance", "hr"]
    assert run("docs", "delete", "office-hours").stdout.strip() == "deleted office-hours"
    assert run("docs", "rm", "refund-policy").exit_code == 0  # the old name still works
    assert len(json.loads(run("docs", "list", "--json").stdout)) == 3 + 4 - 2
    token = run("tokens", "create", "--principal", "a", "--role", "hr", "--roles", "x",
                "--json")
    assert json.loads(token.stdout)["roles"] == ["hr", "x"]
    cases = str(EXAMPLES / "cases" / "workshop.yaml")
    fresh = str(tmp_path / "cases-kb")
    assert run("ingest", WORKSHOP, kb_dir=fresh).exit_code == 0
    assert "passed: 3/3" in run("evaluate", cases, kb_dir=fresh).stdout
    assert "passed: 3/3" in run("eval", cases, kb_dir=fresh).stdout
    helps = run("--help", kb_dir=None).stdout + run("docs", "--help", kb_dir=None).stdout + \
        run("ingest", "--help", kb_dir=None).stdout
    assert "evaluate" in helps and "delete" in helps
    assert not any(word in helps.split() for word in ("eval", "rm", "--roles"))
