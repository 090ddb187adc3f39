"""The chat's helpers that need no server: the text of a Gradio 6 message, and Retry's cut."""
from __future__ import annotations

import gradio as gr
import pytest

from dgrag.ui import _last_question, _text_of


def test_a_gradio_6_message_gives_its_text_back():
    assert _text_of("plain") == "plain"
    assert _text_of([{"type": "text", "text": "如何"}, {"type": "file", "file": "x.png"}, {"text": "？"}]) == "如何？"
    assert _text_of({"type": "text", "text": "one part"}) == "one part"


def test_retry_takes_the_last_question_back_and_drops_its_answer():
    history = [{"role": "user", "content": [{"type": "text", "text": "first"}]},
               {"role": "assistant", "content": [{"type": "text", "text": "answer one"}]},
               {"role": "user", "content": [{"type": "text", "text": "second"}]},
               {"role": "assistant", "content": [{"type": "text", "text": "half an ans"}]}]
    question, kept = _last_question(history)
    assert question == "second" and kept == history[:2]
    assert _last_question(history[:3]) == ("second", history[:2])  # stopped before any answer
    with pytest.raises(gr.Error):
        _last_question([])


def test_why_for_a_reference_found_by_another_method_shows_the_diffusions_walk(indexed):
    from dgrag.service import Service
    from dgrag.ui import _explain

    service = Service(indexed)
    dense = service.retrieve("touch event TouchType Down", {"method": "dense"})
    image = dense["images"][0]["id"]
    fig, text = _explain(service, "touch event TouchType Down", {"method": "dense"}, image)
    assert text.startswith("_This reference came from dense; below is the diffusion's walk for the same search._")
    assert f"- `{image}`: chunk “Touch Event / Example” matched the question directly" in text
    assert "path to a result" in {t.name for t in fig.data}
    fig, text = _explain(service, "touch event TouchType Down", {"method": "diffusion"}, "chunk-not-there")
    assert "_`chunk-not-there` is not among the diffusion's results for “touch event TouchType Down”; its walk:_" in text
    assert text.count("\n- `") == len([it for k in ("chunks", "codes", "tables", "images")  # one line each
                                      for it in service.retrieve("touch event TouchType Down")[k]])
