"""The web page in a real browser: Debian's chromium driven by Playwright's Python package.

Ask a question, see the status badge, click a citation and see the cited lines; a document
carrying ``<script>`` and an ``onerror`` handler is shown as text and runs nothing.
Screenshots go to tests/artifacts/ (git-ignored).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="the playwright Python package is missing")
pytest.importorskip("uvicorn", reason="the [server] extra is not installed")

from playwright.sync_api import Error as PlaywrightError  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

from conftest import EXAMPLES, TESTS  # noqa: E402
from glassrag import KnowledgeBase  # noqa: E402
from glassrag.interfaces.http.app import create_app  # noqa: E402
from glassrag.store.bearer_tokens import create_token  # noqa: E402
from live_server import LiveServer  # noqa: E402

ARTIFACTS = TESTS / "artifacts"
CONSOLE_ERRORS: list[str] = []
HOSTILE = """Visitors park their cars on level 3 of the north garage.
<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">
The garage closes at midnight <b>sharp</b>.
"""
# A document in a subfolder: its doc_id has slashes, and its citation link must still work.
NESTED = "guides/building/lockers.md"
LOCKERS = "# Lockers\n\nStaff lockers are on floor 2 of the west wing, next to the showers.\n"


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("web")
    docs = root / "docs"
    (docs / "guides" / "building").mkdir(parents=True)
    (docs / "parking.txt").write_text(HOSTILE, encoding="utf-8")
    (docs / NESTED).write_text(LOCKERS, encoding="utf-8")
    with KnowledgeBase.open(root / "kb") as kb:
        report = kb.ingest([EXAMPLES, docs], exclude=["**/*.yaml", "README.md"])
        assert report.failed == []
        assert NESTED in {d.doc_id for d in kb.documents()}
    app = create_app(root / "kb")
    with app.state.kb.lock:
        token = create_token(app.state.kb.store, "browser", ["employee"])
    with LiveServer(app) as server:
        yield server.url, token


@pytest.fixture(scope="module")
def page(base_url: tuple[str, str]) -> Iterator[Any]:
    url, token = base_url
    with sync_playwright() as p:
        try:
            browser = p.chromium.launch(
                executable_path=str(CHROMIUM), headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                      "--disable-component-update"],
            )
        except PlaywrightError as exc:
            pytest.skip(f"chromium could not start here: {exc}")
        context = browser.new_context()
        context.add_init_script(f"localStorage.setItem('glassrag.token', {token!r});")
        page = context.new_page()
        page.set_default_timeout(10_000)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # Failed loads and Content-Security-Policy violations are reported on the console.
        page.on("console", lambda msg: CONSOLE_ERRORS.append(msg.text)
                if msg.type == "error" else None)
        page.goto(url + "/")
        yield page
        assert errors == [] and CONSOLE_ERRORS == [], (errors, CONSOLE_ERRORS)
        browser.close()


def _ask(page: Any, question: str) -> None:
    page.fill("#question", question)
    with page.expect_response(lambda r: r.url.endswith("/ask")):
        page.click("#ask")
    # The button is disabled while asking and enabled again once the answer is rendered,
    # so nothing below can see the previous answer.
    expect(page.locator("#ask")).to_be_enabled()
    expect(page.locator("#source")).to_be_hidden()


def test_ask_and_open_a_citation(page: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    _ask(page, "How many days do learners have for refunds?")
    expect(page.locator("#status")).to_have_text("answered")
    expect(page.locator("#status")).to_have_class("badge answered")
    assert page.locator("#evidence tbody tr").count() >= 1
    page.screenshot(path=str(ARTIFACTS / "web-answer.png"), full_page=True)
    page.locator("#citations button.citation").first.click()
    cited = page.locator("#source-lines .cited")
    expect(cited.first).to_be_visible()
    quote = page.locator("#citations .quote").first.inner_text()
    assert quote[:15] in page.locator("#source-lines").inner_text()
    page.screenshot(path=str(ARTIFACTS / "web-citation.png"), full_page=True)
    page.click("#show-trace")
    expect(page.locator("#trace")).to_contain_text('"trace_id"')


def test_document_html_is_shown_as_text(page: Any) -> None:
    _ask(page, "Where do visitors park their cars in the garage?")
    expect(page.locator("#status")).to_have_text("answered")
    page.locator("#citations button.citation").first.click()
    expect(page.locator("#source-lines")).to_contain_text("<script>window.__pwned = 1</script>")
    expect(page.locator("#evidence")).to_contain_text("<script>")
    page.screenshot(path=str(ARTIFACTS / "web-escaped.png"), full_page=True)
    assert page.evaluate("window.__pwned") is None
    # No element from the document's markup made it into the DOM.
    assert page.locator("main script, main img, #evidence b, #source-lines b").count() == 0


def test_a_nested_doc_id_citation_opens(page: Any) -> None:
    _ask(page, "Where are the staff lockers?")
    expect(page.locator("#status")).to_have_text("answered")
    link = page.locator("#citations button.citation").first
    with page.expect_response(lambda r: "/lines?" in r.url) as reply:
        link.click()
    assert reply.value.status == 200
    expect(page.locator("#source-lines .cited").first).to_contain_text("floor 2 of the west wing")
    expect(page.locator("#error")).to_be_hidden()
    page.screenshot(path=str(ARTIFACTS / "web-nested.png"), full_page=True)


def test_the_page_runs_under_its_content_security_policy(page: Any,
                                                         base_url: tuple[str, str]) -> None:
    url, _ = base_url
    reply = page.request.get(url + "/")
    assert "script-src 'self'" in reply.headers["content-security-policy"]
    # Inline script is refused by the policy (the page itself has none).
    page.evaluate("""() => { const s = document.createElement('script');
        s.textContent = 'window.__inline = 1'; document.body.append(s); }""")
    assert page.evaluate("window.__inline") is None
    assert len(CONSOLE_ERRORS) == 1 and "Content Security Policy" in CONSOLE_ERRORS[0]
    CONSOLE_ERRORS.clear()


def test_api_docs_page(page: Any, base_url: tuple[str, str]) -> None:
    url, _ = base_url
    page.goto(url + "/docs")
    expect(page.locator("#routes")).to_contain_text("POST /ask")
    expect(page.locator("#routes")).to_contain_text("GET /documents/{doc_id}/lines")
    page.goto(url + "/")


def test_only_the_modes_the_knowledge_base_serves_are_offered(page: Any) -> None:
    # This knowledge base has no embedder: dense and hybrid would only give an error.
    options = page.locator("#mode option")
    expect(options).to_have_count(3)
    assert [options.nth(i).get_attribute("value") for i in range(3)] == ["", "bm25",
                                                                          "overlap"]
    assert options.first.inner_text() == "default mode (bm25)"
