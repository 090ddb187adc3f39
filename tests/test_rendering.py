"""One renderer for a retrieved item: the merged context (/retrieve) and the agent's book show
an item's body alike, captions cut at one length."""
from __future__ import annotations

from dgrag.answer.book import ContextBook, render_item
from dgrag.config import Settings
from dgrag.core import CAPTION_CHARS, Reference, RetrievalResult
from dgrag.retrieve.context import merge_context

LONG = "A chart of the build steps, " + "x" * 500 + "\nsecond line [with brackets]"


def _image(summary: str = LONG) -> Reference:
    return Reference("i1", "image", 0.5, "Guide / Build", "https://d/x.md", summary=summary,
                     image={"sha": "ab" * 32, "width": 10, "height": 10, "alt": "alt text", "page": 1})


def _code() -> Reference:
    return Reference("k1", "code", 0.4, "Guide / Code", "https://d/y.md", text="print(1)\n```inner```",
                     code_language="python")


def test_the_book_and_the_merged_context_render_an_item_alike():
    refs = {"images": [_image()], "codes": [_code()]}
    context = merge_context(refs, Settings())
    book = ContextBook(10_000)
    book.add(RetrievalResult("q", "dense", refs, context, {"rag_total": 0.0}), 1)
    shown = book.render_numbered()
    for ref in (_image(), _code()):
        body = ref.body_markdown()
        assert body in context and body in shown and render_item(ref).endswith(body)
    caption = LONG.replace("\n", " ")[:CAPTION_CHARS]
    assert f"\n\n{caption}" in context and f"\n\n{caption}" in shown  # one length (was 200 here, 300 there)
    assert LONG.replace("\n", " ")[:CAPTION_CHARS + 1] not in shown + context
    assert "````python\nprint(1)" in shown  # a fence longer than the one inside


def test_an_image_without_summary_is_captioned_by_its_alt_text():
    body = _image(summary="").body_markdown()
    assert body == f"![alt text](/images/{'ab' * 32})\n\nalt text"


def test_the_source_line_is_there_only_when_the_item_has_a_source():
    with_url = render_item(_code(), 1)
    assert with_url.startswith("[1] code · Guide / Code\n  Source: https://d/y.md\n")
    passage = Reference("p1", "chunk", 0.3, "Passage 7", None, text="Some text.")
    assert render_item(passage, 2) == "[2] chunk · Passage 7\n\nSome text."
