"""The widget and the chat's thumbs in real headless Chromium (Debian's, driven by Playwright).

A docs site (the fixture excerpt and a page with the one-line embed) is served by a plain
http.server on its own 127.0.0.1 port, so the widget runs on another origin than the app, as on
a team's site; the index's source URLs point into that site. A second server on a third port
serves the same pages from an origin the app does not allow; the site's docs hold one hostile
page (script tags, an img with onerror, a javascript: link) that must show as text. Screenshots go
to tests/artifacts/."""
from __future__ import annotations

import functools
import re
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
    (root / "site" / "docs" / "en" / "hostile.md").write_text(HOSTILE, encoding="utf-8")
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
HOSTILE = ("# Zebrafish hostile page\n\nZebrafish <script>window.__pwned = 1</script> "
           "<img src=x onerror=\"window.__pwned = 2\"> marker, see [the trap](javascript:window.__pwned=3).\n\n"
           "| Zebrafish field | Value |\n|---|---|\n"
           "| <img src=x onerror=\"window.__pwned = 4\"> | &lt;b&gt;bold&lt;/b&gt; |\n")
# a node id, a section id or a chunk hash anywhere in the widget's markup (text and attributes)
NODE_ID = re.compile(r"\b(chunk|code|table|image|file|entity|sec)-[0-9a-f]{6}|\bsec-\w")


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


WIDGET = {  # the page, the API question, the off-topic one, the widget's words (widget.js's T)
    "en": ("en.html", "What fields does a TouchEvent have?", "How do I bake sourdough bread?",
           {"params": ["Parameter", "Type", "Description"], "copy": "Copy", "copied": "Copied", "sources": "Sources (",
            "nc": "The docs don't seem to cover this", "follow": "You might also ask", "since": "Since"}),
    "zh": ("zh.html", "TouchEvent 有哪些字段？", "怎么在家烤酸面包？",
           {"params": ["参数", "类型", "说明"], "copy": "复制", "copied": "已复制", "sources": "来源 (",
            "nc": "文档中似乎没有涉及这个问题", "follow": "你也可以问", "since": "起始版本"}),
}


def _ask_widget(page, question: str) -> None:
    """Type a question into the open widget and wait for its answer to be whole (its thumbs)."""
    done = page.evaluate(f"{SHADOW}.querySelectorAll('.a .f').length")
    page.locator("form textarea").fill(question)
    page.keyboard.press("Enter")
    page.wait_for_function(f"{SHADOW}.querySelectorAll('.a .f').length > {done}")


def _shown(page) -> str:
    """Everything of the widget a person or a program reading the page gets: text and attributes."""
    return page.evaluate(f"{SHADOW}.querySelector('.l').innerHTML")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_widget_renders_the_answers_components(site, page, lang):
    """The `done` event's components in the widget: the answer card with its citations linked, the
    API card, code with its language and a working Copy button, tables as tables, the page's
    image from the app, the sources folded, follow-ups that ask in the widget; an off-topic
    question gets the not-covered notice first, with its closest sections; no node id shown."""
    origin, _, app = site
    name, api_question, off_topic, w = WIDGET[lang]
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin)
    page.goto(origin + "/" + name)
    page.locator(".b").click()
    _ask_widget(page, api_question)
    a = page.locator(".a").last
    cites = a.locator(".ac a.r")  # the answer card's [n], each to its numbered source's page
    assert cites.count() >= 1 and re.fullmatch(r"\[\d+\]", cites.first.inner_text())
    assert cites.first.get_attribute("href").startswith(origin + "/docs/") and cites.first.get_attribute("title")
    assert a.locator(".ac table th").count() >= 2 and "|---" not in a.inner_text()  # its table row, as a table
    api = a.locator("section.api")
    assert api.locator("strong code").inner_text() == "TouchEvent" and w["since"] in api.locator(".ah").inner_text()
    assert api.locator("th").all_inner_texts() == w["params"]
    assert api.locator("td", has_text="Array<TouchObject>").count() >= 1  # a generic type, not eaten as a tag
    code = a.locator(".k").last
    assert code.locator(".kb span").inner_text() == "ts"
    copy = code.get_by_role("button", name=w["copy"])
    copy.focus()
    page.keyboard.press("Enter")  # a button: the keyboard works it
    page.wait_for_function(f"{SHADOW}.querySelector('.a:last-of-type .k:last-of-type button').innerText === "
                           f"{w['copied']!r}")
    assert page.evaluate("navigator.clipboard.readText()") == code.locator("pre code").inner_text()
    sources = a.locator("details.s")
    assert sources.get_attribute("open") is None and sources.locator("summary").inner_text().startswith(w["sources"])
    links = sources.locator("a[href]")
    assert links.count() >= 2 and all(h.startswith(origin + "/docs/") for h in
                                      [links.nth(i).get_attribute("href") for i in range(links.count())])
    sources.locator("summary").focus()
    page.keyboard.press("Enter")
    assert sources.get_attribute("open") is not None
    follow = a.locator(".fu button")
    assert 2 <= follow.count() <= 3 and a.locator(".fu p").inner_text() == w["follow"]
    assert not NODE_ID.search(_shown(page)), NODE_ID.search(_shown(page))
    page.screenshot(path=str(ARTIFACTS / f"widget-api-{lang}.png"))

    asked = follow.first.inner_text()
    follow.first.click()  # a follow-up asks its question here
    page.wait_for_function(f"{SHADOW}.querySelectorAll('.a .f').length === 2")
    assert page.locator(".q").last.inner_text() == asked and page.locator(".a").last.locator(".ac").count() == 1

    _ask_widget(page, off_topic)
    a = page.locator(".a").last
    notice = a.locator(".nc[role=note]")
    assert notice.count() == 1 and notice.inner_text().startswith(w["nc"])
    assert a.locator(":scope > *").first.locator(".nc").count() == 1  # first, before anything else
    assert notice.locator("a[href^='" + origin + "/docs/']").count() >= 1  # the closest sections, linked
    assert a.inner_text().count(w["nc"]) == 1  # the server's own sentence is not repeated under it
    assert a.locator("table th").count() >= 1 and a.locator(".k button").count() >= 1
    img = a.locator("figure img").first
    assert img.get_attribute("src").startswith(app.url + "/images/")  # from the app, beside the site
    page.wait_for_function(f"[...{SHADOW}.querySelectorAll('.a:last-of-type figure img')]"
                           ".some(i => i.complete && i.naturalWidth > 0)")
    assert not NODE_ID.search(_shown(page)), NODE_ID.search(_shown(page))
    page.screenshot(path=str(ARTIFACTS / f"widget-not-covered-{lang}.png"))


def test_the_widget_shows_a_hostile_pages_markup_as_text(site, page):
    """A page of the docs with script tags, an onerror image and a javascript: link, answered in
    the widget: its markup is shown as text, nothing runs, the link is no link."""
    origin, _, _ = site
    page.goto(origin + "/en.html")
    page.locator(".b").click()
    _ask_widget(page, "Zebrafish hostile page marker field")
    page.wait_for_timeout(500)
    a = page.locator(".a").last
    assert page.evaluate("window.__pwned === undefined")
    assert "Zebrafish" in a.inner_text() and '<img src=x onerror="window.__pwned = 4">' in a.inner_text()
    assert a.locator("script, img[src='x'], a[href^='javascript']").count() == 0
