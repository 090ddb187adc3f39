"""POST /feedback: a thumb up or down, and an optional comment, on one answer given by any channel
(the chat, the widget, REST, /v1 by its completion id, MCP), stored with the answer in the index's
question log (asklog.py). An unknown id is a 404; the body limit and rate limit are the other
work routes' (api.BoundedRequests)."""
from __future__ import annotations

from pydantic import BaseModel, Field

from ..errors import UnknownAnswer
from .indexes import Indexes
from .widget import channel_of

ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
MAX_COMMENT = 2000
CHANNELS = ("chat", "widget", "rest", "v1", "mcp")


class FeedbackRequest(BaseModel):
    answer_id: str = Field(..., pattern=ID_PATTERN, description="the answer's id: `answer_id` of /chat and "
                           "/chat/stream's done event, the `id` of a /v1 chat completion, `answer_id` of MCP ask")
    rating: int = Field(..., ge=-1, le=1, description="1 thumbs up, -1 thumbs down, 0 a comment alone")
    comment: str = Field("", max_length=MAX_COMMENT, description="what was wrong or missing (optional)")


class FeedbackResponse(BaseModel):
    answer_id: str
    rating: int
    feedback_id: int = Field(..., description="the stored row's id")
    index: str = Field(..., description="the index whose log holds the answer")


def give(indexes: Indexes, answer_id: str, rating: int, comment: str = "", channel: str = "rest") -> dict:
    """Store a verdict on an answer in the log of the index that gave it."""
    comment = comment.replace("\x00", " ").strip()[:MAX_COMMENT]
    for name, svc in indexes:
        if svc.log.holds(answer_id):
            row = svc.log.feedback(answer_id, rating, comment, channel if channel in CHANNELS else "rest")
            return {"answer_id": answer_id, "rating": rating, "feedback_id": row, "index": name}
    raise UnknownAnswer(f"no answer with id {answer_id!r} (never given here, or past the log's retention period)")


def add_route(app, indexes: Indexes, errors: dict) -> None:
    from fastapi import Header

    @app.post("/feedback", response_model=FeedbackResponse,
              responses={404: {"model": errors[422]["model"], "description": "no answer with this id"},
                         503: {"model": errors[422]["model"], "description": "no writable question log"},
                         **errors})
    def feedback(body: FeedbackRequest, x_dgrag_channel: str | None = Header(None, include_in_schema=False)) -> dict:
        return give(indexes, body.answer_id, body.rating, body.comment, channel_of(x_dgrag_channel, "rest"))
