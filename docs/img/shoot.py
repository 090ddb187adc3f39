"""Take the README's two pictures: the chat and the inspector's graph, in headless Chromium, of
the app serving the test excerpt (tests/fixtures/docs) with its offline semantic layer; and the
answer's components in both languages for docs/answers.md.

    .venv/bin/python docs/img/shoot.py          # writes docs/img/chat.png and docs/img/inspector.png
    .venv/bin/python docs/img/shoot.py answers  # writes docs/img/answer-{en,zh}.png and answer-image-{en,zh}.png
    .venv/bin/python docs/img/shoot.py widget   # writes docs/img/widget-answer-{en,zh}.png

The same way tests/test_browser.py drives the app (Debian's chromium through Playwright); the
pictures are cut to the part that matters and reduced to a 256-colour palette, so each stays
well under 150 KB (tests/test_docs.py checks the size).
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
OUT = ROOT / "docs" / "img"
URLS = "https://github.com/arkui-x/docs/blob/master/{path}#L{line}"


def indexed_app(work: Path, **settings_extra):
    """The excerpt indexed and given its offline semantic layer, served on 127.0.0.1."""
    from app_server import start_app

    from dgrag.config import Settings
    from dgrag.store import Store
    from dgrag.workflows import enrich_index, index_docs

    shutil.copytree(ROOT / "tests" / "fixtures" / "docs", work / "docs")
    settings = Settings(db_path=work / "app.db", docs_root=work / "docs", url_template=URLS, **settings_extra)
    with Store(settings.db_path) as st:
        index_docs(settings, st)
        enrich_index(settings, st)  # no LLM configured: the offline path
    return start_app(settings)


def small_png(raw: Path, dest: Path, width: int, colors: int = 256) -> None:
    """Scaled to `width` pixels and reduced to a palette: a UI picture loses nothing visible."""
    from PIL import Image

    with Image.open(raw) as im:
        im = im.convert("RGB")
        if im.width > width:
            im = im.resize((width, round(im.height * width / im.width)), Image.LANCZOS)
        im.quantize(colors=colors, method=Image.Quantize.MEDIANCUT).save(dest, optimize=True)
    print(f"{dest.relative_to(ROOT)}: {dest.stat().st_size // 1024} KB")


def stack(upper: Path, lower: Path, dest: Path) -> None:
    from PIL import Image

    with Image.open(upper) as a, Image.open(lower) as b:
        out = Image.new("RGB", (max(a.width, b.width), a.height + b.height), "white")
        out.paste(a, (0, 0))
        out.paste(b, (0, a.height))
        out.save(dest)


def shoot(url: str, work: Path) -> None:
    from playwright.sync_api import sync_playwright
    from test_browser import CHROMIUM, FLAGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(120_000)
        page.goto(url + "/")
        page.locator("#question textarea").fill("How do I create a new page? Show the screenshot")
        page.locator("#retrieval-only input").check()
        page.locator("#send").click()
        page.wait_for_function("[...document.querySelectorAll('#chatbot img')].some(i => i.complete && i.naturalWidth > 0)")
        # the answer's start (its text and citations) and the numbered references under it: the
        # conversation is let grow to its full height, then the two parts are cut out and stacked
        page.evaluate("""[document.querySelector('#chatbot'), ...document.querySelectorAll('#chatbot *')]
            .filter(e => e.scrollHeight > e.clientHeight + 10)
            .forEach(e => { e.style.height = 'auto'; e.style.maxHeight = 'none'; e.style.overflow = 'visible'; })""")
        page.wait_for_timeout(500)
        top = page.locator("#chatbot").bounding_box()
        refs = page.locator("#references").bounding_box()
        page.screenshot(path=str(work / "chat-top.png"), full_page=True,
                        clip={"x": 0, "y": 0, "width": 1280, "height": top["y"] + 470})
        page.screenshot(path=str(work / "chat-refs.png"), full_page=True,
                        clip={"x": 0, "y": refs["y"] - 8, "width": 1280, "height": min(refs["height"], 240) + 16})
        page.get_by_role("tab", name="Retrieval inspector").click()
        page.locator("#inspect-question textarea").fill("touch event TouchType Down")
        page.locator("#inspect").click()
        page.wait_for_function("document.querySelector('#subgraph .js-plotly-plot .scatterlayer')")
        page.wait_for_timeout(1000)
        page.locator("#subgraph").screenshot(path=str(work / "inspector.png"))
        browser.close()


ANSWERS = {"en": ("What fields does a TouchEvent have?", "How do I create a new page? Show the screenshot"),
           "zh": ("TouchEvent 有哪些字段？", "如何新建页面？给我看截图")}


def shoot_answers(url: str, work: Path) -> None:
    """Each language's two answers with no LLM, the last message cut out whole: the answer card,
    the API card, a code block, a table, the sources (unfolded for the picture), the follow-ups;
    then the answer with a screenshot."""
    from playwright.sync_api import sync_playwright
    from test_browser import CHROMIUM, FLAGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900})
        page.set_default_timeout(120_000)
        for lang, questions in ANSWERS.items():
            for name, question in zip(("answer", "answer-image"), questions):
                page.goto(url + "/")
                page.locator("#question textarea").fill(question)
                page.locator("#retrieval-only input").check()
                page.locator("#send").click()
                page.wait_for_function("document.querySelector('#chatbot').innerText.includes("
                                       f"{'你也可以问' if lang == 'zh' else 'You might also ask'!r})")
                page.wait_for_function("[...document.querySelectorAll('#chatbot img')].every(i => i.complete)")
                # the conversation let grow to its full height, its ancestors with it (else it spills over the inputs)
                page.evaluate("""document.querySelectorAll('#chatbot details').forEach(d => d.open = true);
                    const up = []; for (let e = document.querySelector('#chatbot'); e; e = e.parentElement) up.push(e);
                    [...up, ...document.querySelectorAll('#chatbot *')]
                    .filter(e => e.scrollHeight > e.clientHeight + 10 || up.includes(e))
                    .forEach(e => { e.style.height = 'auto'; e.style.maxHeight = 'none'; e.style.overflow = 'visible'; })""")
                page.wait_for_timeout(500)
                page.locator("#chatbot .bot-row").last.screenshot(path=str(work / f"{name}-{lang}.png"))
        browser.close()


WIDGET = {"en": "What fields does a TouchEvent have?", "zh": "怎么在家烤酸面包？"}


def shoot_widget(site: str, work: Path) -> None:
    """The widget on a page of another origin (as on a team's site), one answer each with no LLM:
    in English an API question (answer card, API card, code, table, image, sources, follow-ups),
    in Chinese an off-topic one (the not-covered notice first); the panel let grow to its answer's
    height and cut out, its sources unfolded for the picture."""
    from playwright.sync_api import sync_playwright
    from test_browser import CHROMIUM, FLAGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 900, "height": 3000}, device_scale_factor=2)
        page.set_default_timeout(120_000)
        for lang, question in WIDGET.items():
            page.goto(f"{site}/{lang}.html")
            page.locator(".b").click()
            page.locator("form textarea").fill(question)
            page.keyboard.press("Enter")
            page.wait_for_function("document.querySelector('[data-dgrag-widget]').shadowRoot.querySelector('.a .f')")
            page.wait_for_function("[...document.querySelector('[data-dgrag-widget]').shadowRoot"
                                   ".querySelectorAll('img')].every(i => i.complete)")
            page.evaluate("""(() => { const r = document.querySelector('[data-dgrag-widget]').shadowRoot;
                r.querySelectorAll('details').forEach(d => d.open = true);
                r.querySelector('.p').style.height = 'auto'; r.querySelector('.l').style.overflow = 'visible'; })()""")
            page.wait_for_timeout(500)
            page.locator(".p").screenshot(path=str(work / f"widget-answer-{lang}.png"))
        browser.close()


def widget_pictures(work: Path) -> None:
    from test_widget_browser import PAGE, serve_folder

    (work / "site").mkdir()
    site, server = serve_folder(work / "site")
    app = indexed_app(work, widget_origins=site)
    try:
        for lang in WIDGET:
            html = PAGE.format(lang=lang, app=app.url).replace('data-index="site"', 'data-index="app"')  # app.db
            (work / "site" / f"{lang}.html").write_text(html, encoding="utf-8")
        shoot_widget(site, work)
    finally:
        app.stop()
        server.shutdown()
    for lang in WIDGET:
        small_png(work / f"widget-answer-{lang}.png", OUT / f"widget-answer-{lang}.png", 560, colors=64)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if sys.argv[1:] == ["widget"]:
            return widget_pictures(work)
        app = indexed_app(work)
        try:
            if sys.argv[1:] == ["answers"]:
                shoot_answers(app.url, work)
            else:
                shoot(app.url, work)
        finally:
            app.stop()
        if sys.argv[1:] == ["answers"]:
            for lang in ANSWERS:
                for name in ("answer", "answer-image"):
                    small_png(work / f"{name}-{lang}.png", OUT / f"{name}-{lang}.png", 720, colors=64)
            return
        stack(work / "chat-top.png", work / "chat-refs.png", work / "chat.png")
        small_png(work / "chat.png", OUT / "chat.png", 960)
        small_png(work / "inspector.png", OUT / "inspector.png", 960)


if __name__ == "__main__":
    main()
