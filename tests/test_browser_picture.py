"""In real headless Chromium (Debian's, driven by Playwright), on the excerpt with its offline
semantic layer: the inspector draws the walk as an interactive plotly graph with labels and a
highlighted path, each result says why it was reached, the chat's Stop ends a streaming answer,
Retry asks the last question again, and the chat opens the picture for a chosen reference.
Screenshots are kept under tests/artifacts/."""
from __future__ import annotations

from pathlib import Path

import pytest

from app_server import app_settings, start_app
from test_browser import CHROMIUM, FLAGS

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
LONG_ANSWER = "The page is created in ACE Tools [1]. " * 80  # ~3,000 characters: ~35 s at 4 chars / 50 ms


@pytest.fixture(scope="module")
def slow_llm():
    from openai_server import start_server

    server = start_server(lambda request: LONG_ANSWER, stream_chunk_chars=4, stream_delay_s=0.05)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def live(tmp_path_factory, fixture_index, embedder, slow_llm):
    from dgrag.enrich import semantic_layer
    from dgrag.enrich.runner import run_step
    from dgrag.store import Store

    settings = app_settings(tmp_path_factory.mktemp("picture"), fixture_index,
                            llm_base_url=slow_llm.url + "/v1", llm_model="test-model", llm_api_key="sk-test")
    with Store(settings.db_path) as st:  # entities and facts: the dual graph the picture shows
        run_step(st, settings, "openie", None)
        semantic_layer.finalize(st, settings, embedder)
    app = start_app(settings)
    yield app
    app.stop()


@pytest.fixture
def page(live):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        pg = browser.new_page(viewport={"width": 1280, "height": 1600})
        pg.set_default_timeout(90_000)
        pg.requested = []
        pg.on("request", lambda r: pg.requested.append(r.url))
        yield pg
        browser.close()


def _svg_texts(page, selector: str) -> list[str]:
    return page.locator(selector).evaluate_all("els => els.map(e => e.textContent)")


def _assistant_text(page) -> str:
    return page.evaluate("(() => { const b = [...document.querySelectorAll('#chatbot .message-row')]"
                         ".filter(r => r.className.includes('bot')); "
                         "return b.length ? b[b.length - 1].innerText : ''; })()")


def test_the_inspector_draws_the_walk_with_labels_a_path_and_why(live, page):
    page.goto(live.url + "/")
    page.get_by_role("tab", name="Retrieval inspector").click()
    page.locator("#inspect-question textarea").fill("touch event TouchType Down")
    page.locator("#inspect").click()
    page.wait_for_function("document.querySelector('#subgraph .js-plotly-plot .scatterlayer')")
    page.wait_for_function("document.querySelector('#inspect-why').innerText.includes('matched the question')")
    labels = _svg_texts(page, "#subgraph .scatterlayer text")
    assert "Touch Event / TouchObject" in labels and "Touch Event / Example" in labels
    legend = _svg_texts(page, "#subgraph .legendtext")
    assert "path to a result" in legend and "entity" in legend and "passage" in legend
    assert any(t.startswith("contains 0.30") for t in labels)  # a highlighted hop says its type and cost
    why = page.locator("#inspect-why").inner_text()
    assert "(contains 0.30) · path cost 0.30 · walk score" in why
    point = page.locator("#subgraph .scatterlayer .trace").filter(
        has=page.locator("text", has_text="Touch Event / TouchObject"))
    point.locator("path.point").first.hover(force=True)
    page.wait_for_function("document.querySelector('#subgraph .hoverlayer') && "
                           "document.querySelector('#subgraph .hoverlayer').textContent.includes('walk score')")
    page.screenshot(path=str(ARTIFACTS / "inspector-graph.png"), full_page=True)
    # plotly.js comes with Gradio's own bundle, not from a CDN
    assert not [u for u in page.requested if "plot" in u.lower() and not u.startswith(live.url)]


def test_stop_ends_a_streaming_answer_and_retry_asks_again(live, page, slow_llm):
    page.goto(live.url + "/")
    page.locator("#question textarea").fill("How do I create a page in ACE Tools?")
    page.locator("#send").click()
    page.wait_for_function("document.querySelector('#chatbot').innerText.includes('The page is created')")
    page.locator("#stop").click()
    page.wait_for_timeout(500)
    stopped = _assistant_text(page)
    page.wait_for_timeout(2000)
    assert _assistant_text(page) == stopped and len(stopped) < len(LONG_ANSWER) / 2
    streams = sum(1 for r in slow_llm.requests if (r["json"] or {}).get("stream"))

    page.locator("#retry").click()
    for _ in range(300):  # the question goes to the model again: a second streamed answer
        if sum(1 for r in slow_llm.requests if (r["json"] or {}).get("stream")) > streams:
            break
        page.wait_for_timeout(100)
    page.wait_for_function("document.querySelector('#chatbot').innerText.includes('The page is created')")
    assert sum(1 for r in slow_llm.requests if (r["json"] or {}).get("stream")) == streams + 1
    rows = page.locator("#chatbot .message-row").all_inner_texts()
    assert len(rows) == 2 and "How do I create a page in ACE Tools?" in rows[0]  # asked again, not twice
    page.screenshot(path=str(ARTIFACTS / "chat-stop-retry.png"), full_page=True)
    page.locator("#stop").click()


def test_the_chat_opens_the_picture_for_a_cited_reference(live, page):
    page.goto(live.url + "/")
    page.locator("#question textarea").fill("touch event TouchType Down")
    page.locator("#retrieval-only input").check()
    page.locator("#send").click()
    page.wait_for_function("document.querySelector('#references').innerText.includes('image')")
    page.locator("#why-panel").get_by_text("Why this reference?").click()
    page.locator("#why-pick input").click()
    page.get_by_role("option", name="image").first.click()
    page.locator("#why-show").click()
    page.wait_for_function("document.querySelector('#why-plot .js-plotly-plot .scatterlayer')")
    page.wait_for_function("document.querySelector('#why-text').innerText.includes('→ image')")
    assert "contains 0.30" in page.locator("#why-text").inner_text()
    page.screenshot(path=str(ARTIFACTS / "chat-why.png"), full_page=True)
