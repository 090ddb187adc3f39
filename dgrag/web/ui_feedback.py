"""The chat's feedback: thumbs up or down on each answer (the Chatbot's like buttons), and a
comment on the last answer; both stored through feedback.give, as POST /feedback stores them."""
# no `from __future__ import annotations`: Gradio reads on_like's gr.LikeData hint as a class
from ..errors import DgragError
from .feedback import MAX_COMMENT, give
from .indexes import Indexes

THANKS = "Thanks: your feedback is stored with the answer."


def log_note(indexes: Indexes) -> str:
    """One line under the chat on what is kept of a question (the log is a setting)."""
    log = indexes.service.log
    if log.on and log.path is not None:
        days = f"{log.retention_days} days" if log.retention_days > 0 else "until deleted"
        return (f"_Questions and answers are logged to improve the docs (kept {days}); thumbs and comments "
                "are stored with them._")
    return "_Questions are not logged; thumbs and comments are stored with the answer they name._"


def feedback_controls(gr, chatbot, indexes: Indexes):
    """The thumbs (on the Chatbot), a comment box and its button; returns the State that maps an
    assistant message's index to its answer id, which the chat's handler fills."""
    ids = gr.State({})
    with gr.Row():
        comment = gr.Textbox(placeholder="Comment on the last answer (optional): what was wrong or missing?",
                             scale=5, show_label=False, max_length=MAX_COMMENT, elem_id="feedback-comment")
        send = gr.Button("Send comment", scale=1, elem_id="feedback-send")
    note = gr.Markdown(log_note(indexes), elem_id="feedback-note")

    def on_like(answers, data: gr.LikeData):
        index = data.index[0] if isinstance(data.index, (list, tuple)) else data.index
        answer_id = (answers or {}).get(str(index))
        if not answer_id:
            raise gr.Error("This answer cannot be rated yet (it is still being written, or was stopped).")
        if data.liked is None:  # a thumb clicked again: Gradio unselects it; the verdict given stays stored
            return gr.skip()
        rating, text = (1, "") if data.liked is True else (-1, "") if data.liked is False else (0, str(data.liked))
        _store(gr, indexes, answer_id, rating, text)
        return THANKS

    def on_comment(text, answers):
        text = (text or "").strip()
        if not text:
            raise gr.Error("Write a comment first.")
        if not answers:
            raise gr.Error("Ask a question first: a comment is stored with the last answer.")
        last = max(answers, key=int)
        _store(gr, indexes, answers[last], 0, text)
        return "", THANKS

    chatbot.like(on_like, [ids], [note], api_name=False, queue=False)
    send.click(on_comment, [comment, ids], [comment, note], api_name=False, queue=False)
    return ids


def _store(gr, indexes: Indexes, answer_id: str, rating: int, comment: str) -> None:
    try:
        give(indexes, answer_id, rating, comment, "chat")
    except DgragError as exc:
        raise gr.Error(str(exc)) from None
