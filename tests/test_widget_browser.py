"""The widget and the chat's thumbs in real headless Chromium (Debian's, driven by Playwright).

A docs site (the fixture excerpt and a page with the one-line embed) is served by a plain
http.server on its own 127.0.0.1 port, so the widget runs on another origin than the app, as on
a team's site; the index's source URLs point into that site. A second server on a third port
serves the same pages from an origin the app does not allow. Screenshots go to tests/artifacts/."""
from __future__ import annotations

import functools
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from app_server import free_port
from live_clients import start_served

from dgrag.config import Settings
from dgrag.store import Store

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
FIXTURE_DOCS = Path(__file__).resolve().parent / "fixtures" / "docs"
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
PAGE = ('<!doctype html><html lang="{lang}"><head><meta charset="utf-8"><title>Docs</title></head>'
        '<body><h1>Our docs</h1><p>Some page of the site.</p><a href="#top">a link of the page</a>'
        '<script src="{app}/widget.js" data-index="site"></script></body></html>')


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


def serve_folder(folder: Path) -> tuple[str, ThreadingHTTPServer]:
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{port}", server


@pytest.fixture(scope="module")
def site(tmp_path_factory, embedder):
    """(the docs site's origin, a disallowed origin with the same pages, the live app)."""
    from dgrag.ingest.pipeline import index_folder

    root = tmp_path_factory.mktemp("widget")
    shutil.copytree(FIXTURE_DOCS, root / "site" / "docs")
    origin, site_server = serve_folder(root / "site")
    other, other_server = serve_folder(root / "site")
    settings = Settings(db_path=root / "site.db", docs_root=root / "site" / "docs",
                        url_template=origin + "/docs/{path}", widget_origins=origin)
    with Store(settings.db_path) as st:
        index_folder(settings, st, embedder)
    app, _ = start_served(settings)
    for name, lang in (("en.html", "en"), ("zh.html", "zh-CN")):
        (root / "site" / name).write_text(PAGE.format(lang=lang, app=app.url), encoding="utf-8")
    yield origin, other, app
    app.stop()
    for server in (site_server, other_server):
        server.shutdown()


@pytest.fixture
def page():
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        pg = browser.new_page(viewport={"width": 1280, "height": 900})
        pg.set_default_timeout(120_000)
        yield pg
        browser.close()


SHADOW = "document.querySelector('[data-dgrag-widget]').shadowRoot"


def _failed_in_gaps(app, capsys) -> set[str]:
    """The questions `dgrag gaps` reports as failed (gaps' examples and the ones asked once)."""
    import json

    from dgrag.cli import main

    app.service.log.flush()
    capsys.readouterr()
    assert main(["gaps", "--db", str(app.service.settings.db_path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    return {q for g in data["gaps"] for q in g["examples"]} | {o["question"] for o in data["one_offs"]}


def _logged(app) -> list[dict]:
    app.service.log.flush()
    with Store(app.service.log.path, readonly=True) as st:
        return st.asked.asked_since("")


def test_the_widget_on_another_sites_page_streams_a_cited_answer_and_takes_feedback(site, page, capsys):
    origin, _, app = site
    streamed = []
    page.on("response", lambda r: streamed.append(r.headers.get("content-type", "")) if r.url.endswith("/chat/stream")
            else None)
    page.goto(origin + "/en.html")
    launcher = page.get_by_role("button", name="Ask AI")
    launcher.focus()
    page.keyboard.press("Enter")  # keyboard only: open, type, send
    dialog = page.get_by_role("dialog", name="Ask the docs")
    assert dialog.is_visible() and launcher.get_attribute("aria-expanded") == "true"
    assert page.evaluate(f"{SHADOW}.activeElement.tagName") == "TEXTAREA"
    page.keyboard.type("How do I create an application with ACE Tools?")
    page.keyboard.press("Enter")
    page.wait_for_function(f"{SHADOW}.querySelector('.a .f button')")  # the answer is done: its thumbs are up
    assert streamed and streamed[0].startswith("application/x-ndjson")

    hrefs = page.evaluate(f"[...{SHADOW}.querySelectorAll('.a a[href]')].map(a => a.href)")
    assert hrefs and all(h.startswith(origin + "/docs/") for h in hrefs), hrefs
    assert any("start-with-ace-tools" in h for h in hrefs)
    target = page.request.get(hrefs[0])  # a citation opens the site's page
    assert target.status == 200 and target.text().lstrip().startswith("#")
    answer = page.evaluate(f"{SHADOW}.querySelector('.a').innerText")
    assert "ACE Tools" in answer and "chunk-" not in answer

    for _ in range(12):  # Tab stays in the panel: the page's own link is never reached
        page.keyboard.press("Tab")
        assert page.evaluate(f"{SHADOW}.querySelector('.p').contains({SHADOW}.activeElement)")
    with page.expect_response(lambda r: r.url.endswith("/feedback")) as thumb:
        page.get_by_role("button", name="Not helpful").click()
    assert thumb.value.status == 200
    page.wait_for_function(f"{SHADOW}.querySelector('.f [role=status]').innerText.includes('Thanks')")
    page.get_by_role("textbox", name="What was wrong or missing? (optional)").fill("It skips the SDK setup")
    with page.expect_response(lambda r: r.url.endswith("/feedback")) as comment:
        page.get_by_role("button", name="Send the comment").click()
    assert comment.value.status == 200
    page.screenshot(path=str(ARTIFACTS / "widget.png"))
    page.keyboard.press("Escape")
    assert not dialog.is_visible() and launcher.get_attribute("aria-expanded") == "false"
    assert page.evaluate(f"{SHADOW}.activeElement && {SHADOW}.activeElement.className") == "b"

    (row,) = [r for r in _logged(app) if r["channel"] == "widget"]
    assert row["question"] == "How do I create an application with ACE Tools?" and row["sections"]
    assert row["rating"] == -1 and row["comments"] == ["It skips the SDK setup"]
    assert row["question"] in _failed_in_gaps(app, capsys)  # the gap report reads the widget's thumbs


def test_the_widget_speaks_the_pages_language_and_is_refused_from_an_origin_not_allowed(site, page):
    _, other, app = site
    before = len(_logged(app))
    page.goto(other + "/zh.html")
    page.get_by_role("button", name="问 AI").click()
    page.get_by_role("textbox", name="输入关于文档的问题").fill("ACE Tools 怎么创建应用？")
    page.get_by_role("button", name="发送").click()
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert alert.inner_text().startswith("抱歉，没有得到回答")
    page.screenshot(path=str(ARTIFACTS / "widget-refused.png"))
    assert len(_logged(app)) == before  # refused before any answer ran


def test_thumbs_and_a_comment_in_the_chat_are_stored_with_the_answer(site, page, capsys):
    _, _, app = site
    page.goto(app.url + "/")
    page.locator("#question textarea").fill("What does ace check do?")
    page.locator("#retrieval-only input").check()
    page.locator("#send").click()
    page.wait_for_function("document.querySelector('#references') && "
                           "document.querySelector('#references').innerText.includes('section · ')")
    page.wait_for_function("document.querySelector('#chatbot').innerText.includes('Sources')")  # the answer is whole
    page.locator("#chatbot").get_by_role("button", name="Dislike").last.click()
    page.wait_for_function("document.querySelector('#feedback-note').innerText.includes('Thanks')")
    page.locator("#feedback-comment textarea").fill("ace check output is not explained")
    page.locator("#feedback-send").click()
    page.wait_for_function("!document.querySelector('#feedback-comment textarea').value")
    page.screenshot(path=str(ARTIFACTS / "chat-feedback.png"), full_page=True)
    (row,) = [r for r in _logged(app) if r["channel"] == "chat"]
    assert row["question"] == "What does ace check do?" and row["rating"] == -1
    assert row["comments"] == ["ace check output is not explained"]
    assert row["question"] in _failed_in_gaps(app, capsys)
