"""The chat's helpers: the text of a Gradio 6 message, Retry's cut, the why view for any
reference, and a follow-up that reaches the model with the conversation."""
from __future__ import annotations

import json

import gradio as gr
import pytest

from dgrag.web.ui import _last_question, _text_of


def test_a_gradio_6_message_gives_its_text_back():
    assert _text_of("plain") == "plain"
    parts = [{"type": "text", "text": "如何"}, {"type": "file", "file": "x.png"}, {"text": "？"}]
    assert _text_of(parts) == "如何？"
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
    from dgrag.web.service import Service
    from dgrag.web.ui import _explain

    service = Service(indexed)
    dense = service.retrieve("touch event TouchType Down", {"method": "dense"})
    image = dense["images"][0]["id"]
    fig, text = _explain(service, "touch event TouchType Down", {"method": "dense"}, image)
    assert text.startswith("_This reference came from dense; below is the diffusion's ranking and walk for the same "
                           "search._")
    assert f"`{image}`: chunk “Touch Event / Example” matched the question directly" in text
    assert "path to a result" in {t.name for t in fig.data}
    fig, text = _explain(service, "touch event TouchType Down", {"method": "diffusion"}, "chunk-not-there")
    assert ("_`chunk-not-there` is not among the diffusion's results for “touch event TouchType Down”; "
            "its walk:_") in text
    assert text.count("\n- **#") == len([it for k in ("chunks", "codes", "tables", "images")  # one each
                                         for it in service.retrieve("touch event TouchType Down")[k]])


def test_a_follow_up_in_the_ui_reaches_the_model_with_the_conversation(tmp_path, fixture_index, openai_server_factory):
    """Gradio 6 hands the conversation back as typed parts: their text must reach the agent,
    which rewrites a follow-up from it (before, the history arrived empty)."""
    from gradio_client import Client

    from app_server import app_settings, start_app

    server = openai_server_factory(lambda request: "How do I run the new app with ACE Tools?")
    app = start_app(app_settings(tmp_path, fixture_index, llm_base_url=server.base_url, llm_model="chat",
                                 llm_timeout_s=10, llm_max_retries=0, chat_images="off"))
    try:
        client = Client(app.url + "/", verbose=False)
        before = [{"role": "user", "content": [{"type": "text", "text": "How do I create an app with ACE Tools?"}]},
                  {"role": "assistant", "content": [{"type": "text", "text": "Run ace create [1]."}]}]
        history, refs, _ = client.predict("And how do I run it?", before, False, "diffusion",
                                          10, 2, 2, 2, 50, 100, 2.0, 12000, 0.5, api_name="/chat")
    finally:
        app.stop()
    prompts = [json.dumps(r["json"], ensure_ascii=False) for r in server.requests if r["path"].endswith("/completions")]
    rewrite = [p for p in prompts if "And how do I run it?" in p and "How do I create an app with ACE Tools?" in p]
    assert rewrite and "Run ace create [1]." in rewrite[0]
    assert len(history) == 4 and "section · " in refs and "chunk-" not in refs
