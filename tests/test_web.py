"""The web page in a real browser: Debian's chromium driven by Playwright's Python package.

Ask a question, see the status badge, click a citation and see the cited lines; a document
carrying ``<script>`` and an ``onerror`` handler is shown as text and runs nothing.
Screenshots go to tests/artifacts/ (git-ignored).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
pytest.importorskip("playwright.sync_api", reason="the playwright Python package is missing")
pytest.importorskip("uvicorn", reason="the [server] extra is not installed")

import uvicorn  # noqa: E402
from playwright.sync_api import Error as PlaywrightError  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

from conftest import EXAMPLES  # noqa: E402
from glassrag import KnowledgeBase  # noqa: E402
from glassrag.interfaces.http.app import create_app  # noqa: E402
from glassrag.store.bearer_tokens import create_token  # noqa: E402

ARTIFACTS = Path(__file__).parent / "artifacts"
HOSTILE = """Visitors park their cars on level 3 of the north garage.
<script>window.__pwned = 1</script><img src="x" onerror="window.__pwned = 2">
The garage closes at midnight <b>sharp</b>.
"""


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("web")
    docs = root / "docs"
    docs.mkdir()
    (docs / "parking.txt").write_text(HOSTILE, encoding="utf-8")
    with KnowledgeBase.open(root / "kb") as kb:
        report = kb.ingest([EXAMPLES, docs], exclude=["**/*.yaml", "README.md"])
        assert report.failed == []
    app = create_app(root / "kb")
    with app.state.kb.lock:
        token = create_token(app.state.kb.store, "browser", ["employee"])
    # Port 0: the OS picks a free port, read back once uvicorn is listening (no race).
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        assert thread.is_alive(), "uvicorn stopped while starting"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", token
    server.should_exit = True
    thread.join(timeout=10)


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
        page.goto(url + "/")
        yield page
        assert errors == []
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
