"""The per-file parse budget: a helper process with a memory cap and a deadline.

These run real parses that would take minutes or gigabytes in-process (the pre-parse bounds
lifted through ``Limits`` so the budget is what stops them), and check the file fails alone
with the budget in its message, the helper recovers for the next file, and Markdown, text and
JSONL never start it.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import init_kb_with
from glassrag import KnowledgeBase
from glassrag.errors import InputFileError
from glassrag.parsers import Budget, Limits, ParseOptions, parse_bytes, parser_for, worker
from parser_samples import make_docx_table, make_pdf

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the helper needs POSIX")

UNBOUNDED = Limits(max_html_attributes=10**9, max_email_header_bytes=10**9,
                   max_email_headers_bytes=10**9)


MB = 400  # one memory budget for the tests here, so they share one helper


@pytest.fixture(autouse=True, scope="module")
def _no_helper_left_behind():
    yield
    worker._stop_current()


def _attributes_page(count: int) -> bytes:
    attrs = " ".join(f"a{i}" for i in range(count))
    return f"<html><body><p {attrs}>text</p></body></html>".encode()


def test_a_parse_over_the_time_budget_is_killed_and_the_helper_restarts() -> None:
    html = parser_for(".html")
    assert html is not None
    options = ParseOptions(limits=UNBOUNDED, budget=Budget(seconds=1.0, memory_mb=MB))
    # 200,000 distinct attributes: lexbor needs minutes for this element.
    with pytest.raises(InputFileError) as caught:
        parse_bytes(html, _attributes_page(200_000), "slow", options)
    assert caught.value.message == "cannot parse HTML: exceeded the 1 s parse budget"
    assert worker._CURRENT is None  # killed, not left running
    parsed = parse_bytes(html, b"<p>next file</p>", "next", options)
    assert parsed.text == "next file"


def test_a_parse_over_the_memory_budget_fails_alone() -> None:
    eml = parser_for(".eml")
    assert eml is not None
    word = base64.b64encode(b"x" * 45).decode()
    subject = " ".join(f"=?utf-8?b?{word}?=" for _ in range(20_000))  # ~14 GB to decode
    raw = f"From: a@example.org\nSubject: {subject}\n\nBody.\n".encode()
    options = ParseOptions(limits=UNBOUNDED, budget=Budget(seconds=120.0, memory_mb=MB))
    with pytest.raises(InputFileError) as caught:
        parse_bytes(eml, raw, "huge", options)
    assert caught.value.message == f"cannot parse e-mail (.eml): exceeded the {MB} MB parse budget"
    parsed = parse_bytes(eml, b"From: a@example.org\nSubject: ok\n\nSmall.\n", "ok", options)
    assert parsed.title == "ok"


def test_a_helper_that_dies_mid_parse_fails_that_file() -> None:
    html = parser_for(".html")
    assert html is not None
    options = ParseOptions(limits=UNBOUNDED, budget=Budget(seconds=120.0, memory_mb=MB))
    parse_bytes(html, b"<p>warm up</p>", "warm", options)
    current = worker._CURRENT
    assert current is not None

    def kill_soon() -> None:
        time.sleep(0.5)
        os.kill(current.proc.pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_soon)
    killer.start()
    try:
        with pytest.raises(InputFileError) as caught:
            parse_bytes(html, _attributes_page(200_000), "slow", options)
    finally:
        killer.join()
    assert caught.value.message == (
        "cannot parse HTML: the parser process died (killed by SIGKILL)")
    assert parse_bytes(html, b"<p>again</p>", "again", options).text == "again"


def test_errors_and_results_cross_the_process_boundary_intact() -> None:
    pdf = parser_for(".pdf")
    assert pdf is not None
    budget = ParseOptions(budget=Budget(memory_mb=MB))
    raw = make_pdf([["First page."], ["Second page."]], title="Two pages")
    here = parse_bytes(pdf, raw, "two", ParseOptions())
    assert parse_bytes(pdf, raw, "two", budget) == here
    with pytest.raises(InputFileError) as caught:
        parse_bytes(pdf, b"%PDF-1.4 no end", "cut", budget)
    assert caught.value.message == "truncated PDF: no %%EOF marker at the end of the file"


def test_ingest_applies_the_budget_and_the_batch_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "big.docx").write_bytes(make_docx_table(300, 300, "x"))  # ~10 s to parse
    (folder / "small.pdf").write_bytes(make_pdf([["The ferry leaves at noon."]]))
    (folder / "notes.md").write_text("# Notes\n\nplatypus sightings are rare\n")
    kb = KnowledgeBase.open(init_kb_with(tmp_path / "kb", "parse_timeout = 30",
                                         "parse_timeout = 0.5"))
    try:
        report = kb.ingest([folder])
        assert [(f.path, f.error) for f in report.failed] == [(
            str(folder / "big.docx"),
            "cannot parse Word document (.docx): exceeded the 0.5 s parse budget")]
        assert kb.search("ferry noon").hits and kb.search("platypus").hits
    finally:
        kb.close()


def test_markdown_text_and_jsonl_never_start_the_helper(tmp_path: Path) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nalpha text\n")
    (folder / "b.txt").write_text("beta text\n")
    (folder / "c.jsonl").write_text('{"doc_id": "c", "text": "gamma text"}\n')
    worker._stop_current()
    kb = KnowledgeBase.open(tmp_path / "kb")
    try:
        assert kb.ingest([folder]).failed == []
        assert worker._CURRENT is None
        (folder / "d.html").write_text("<p>delta text</p>")
        assert kb.ingest([folder]).failed == []
        assert worker._CURRENT is not None and worker._CURRENT.alive()
    finally:
        kb.close()


def test_the_settings_written_by_init_hold_the_budget(tmp_path: Path) -> None:
    kb = KnowledgeBase.init(tmp_path / "kb")
    try:
        ingest = kb.settings.ingest
        assert (ingest.parse_timeout, ingest.parse_memory_mb) == (30.0, 2048)
        assert ingest.parse_in_subprocess and not ingest.keep_hidden
    finally:
        kb.close()
    text = (tmp_path / "kb" / "glassrag.toml").read_text()
    for line in ("parse_timeout = 30", "parse_memory_mb = 2048", "parse_in_subprocess = true",
                 "keep_hidden = false"):
        assert f"\n{line}\n" in text


_ORPHAN = r'''
from glassrag.parsers import Budget, Limits, ParseOptions, parse_bytes, parser_for, worker
options = ParseOptions(limits=Limits(max_html_attributes=10**9), budget=Budget(600, 400))
parse_bytes(parser_for(".html"), b"<p>warm up</p>", "warm", options)
print(worker._CURRENT.proc.pid, flush=True)
attrs = " ".join(f"a{i}" for i in range(200_000))
parse_bytes(parser_for(".html"), f"<p {attrs}>t</p>".encode(), "slow", options)
'''


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_helper_ends_with_its_parent_even_mid_parse() -> None:
    # A parent killed outright leaves a helper stuck in a minutes-long parse; it must go too.
    parent = subprocess.Popen([sys.executable, "-c", _ORPHAN], stdout=subprocess.PIPE,
                              text=True)
    assert parent.stdout is not None
    helper = int(parent.stdout.readline())
    time.sleep(0.5)  # the slow parse is under way
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 30
    while _running(helper) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(helper)
