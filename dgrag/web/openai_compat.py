"""An OpenAI-compatible chat API over the indexes, for chat front-ends (Open WebUI, LibreChat) and
the `openai` client: GET /v1/models (one model per index) and POST /v1/chat/completions, streamed
(SSE chunks, then `data: [DONE]`) or not.

The model name picks the index. The last user message is the question, the earlier user and
assistant turns its history (system messages are the front-end's, not the docs': left out). The
answer is the agent's, citing [n] with the numbered list of source links under it; with no LLM
configured, or `use_llm: false`, the sentences of the docs that answer, cited, with "Read more"
links (dgrag/answer/extractive.py). `answerable`, `confidence` and `components` ride beside
`citations` (the last chunk of a stream). Retrieval
settings ride in the extra body (`retrieval_config`, as in POST /retrieve); a bad one is a 422,
an unknown model a 404, in OpenAI's error shape.
"""
from __future__ import annotations

import json
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..answer.extractive import section_label
from ..core import estimate_tokens, judged
from ..errors import DgragError
from .indexes import Indexes, UnknownIndex
from .leaving import until_gone

MAX_MESSAGES = 200  # beyond the body limit's own bound: the model reads the last 6 turns of the history anyway


class OAIMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None


class CompletionRequest(BaseModel):
    """OpenAI's body; fields this server does not use (temperature, max_tokens, ...) are accepted
    and ignored."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(..., description="an index name (GET /v1/models)", max_length=200)
    messages: list[OAIMessage] = Field(..., min_length=1, max_length=MAX_MESSAGES)
    stream: bool = False
    retrieval_config: dict[str, Any] | None = Field(None, description="retrieval parameters (extra body)")
    use_llm: bool = Field(True, description="false: the extractive answer (cited sentences, Read more), no LLM (extra body)")


def text_of(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def split_messages(messages: list[OAIMessage]) -> tuple[str, list[dict]]:
    """(the question: the last user message, the earlier user/assistant turns)."""
    turns = [{"role": m.role, "content": text_of(m.content)} for m in messages if m.role in ("user", "assistant")]
    if not turns or turns[-1]["role"] != "user":
        return "", []
    return turns[-1]["content"], turns[:-1]


def sources_md(results) -> tuple[str, list[str]]:
    """The retrieved sections as a numbered list of links (and their URLs), for an answer
    without an LLM: under the extractive answer, a chat front-end shows these as links."""
    lines, urls = [], []
    for ref in (r for res in results for r in res.chunks):
        url = ref.source_url or ""
        if url in urls:
            continue
        urls.append(url)
        crumb = section_label(ref.breadcrumb or ref.source_path or "").replace("[", "(").replace("]", ")")
        where = f"[{crumb}]({url})" if url.startswith(("http://", "https://")) else f"{crumb} (`{url}`)"
        lines.append(f"[{len(urls)}] {where}  ")
    return ("\n\n**Sources**\n\n" + "\n".join(lines) if lines else ""), urls


def _citations(meta: dict, results) -> list[str]:
    """The answer's source URLs: the cited references' (all when none was cited), else the
    retrieved sections'."""
    refs = meta.get("references") or []
    cited = set((meta.get("citations") or {}).get("cited") or [])
    shown = [r for r in refs if r.get("n") in cited] or refs
    urls = [r.get("source_url") for r in shown if r.get("source_url")]
    return list(dict.fromkeys(urls)) if urls else sources_md(results)[1]


def error_body(message: str, kind: str, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class Completion:
    """One request's answer, as OpenAI's objects."""

    def __init__(self, indexes: Indexes, body: CompletionRequest):
        self.service = indexes.get(body.model)
        self.model = body.model
        question, self.history = split_messages(body.messages)
        # checked here, before a stream starts: a refusal is a status, not an event
        self.query, self.config = self.service.admit(question, body.retrieval_config)
        self.use_llm = body.use_llm
        self.id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())

    def events(self, cancel=None):
        # the completion's id is the answer's: a client sends it to POST /feedback
        return self.service.chat_events(self.query, self.history, True, self.use_llm, self.config, cancel=cancel,
                                        channel="v1", answer_id=self.id)

    def _chunk(self, delta: dict, finish: str | None = None, **extra) -> str:
        obj = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        return f"data: {json.dumps(obj, ensure_ascii=False)}\n\n"

    def stream(self, cancel=None):
        """SSE: the role, the answer's deltas, the sources (without an LLM), a last chunk with the
        finish reason, the citations and the usage estimate, then [DONE]. `cancel` set (the client
        left): the answer stops at its next step."""
        results, answer = [], []
        yield self._chunk({"role": "assistant", "content": ""})
        try:
            for ev in self.events(cancel):
                if ev["type"] == "retrieval":
                    results.append(ev["result"])
                elif ev["type"] == "text":
                    answer.append(ev["text"])
                    yield self._chunk({"content": ev["text"]})
                elif ev["type"] == "done":
                    meta = ev.get("meta", {})
                    yield self._chunk({}, "stop", citations=_citations(meta, results),
                                      usage=self._usage("".join(answer)), **judged(results),
                                      components=meta.get("components", []), docs_version=meta.get("docs_version"))
        except DgragError as exc:
            yield f"data: {json.dumps(error_body(str(exc), type(exc).__name__))}\n\n"
        yield "data: [DONE]\n\n"

    def whole(self) -> dict:
        results, answer, meta = [], "", {}
        for ev in self.events():
            if ev["type"] == "retrieval":
                results.append(ev["result"])
            elif ev["type"] == "done":
                answer, meta = ev["answer"], ev.get("meta", {})
        return {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                             "finish_reason": "stop"}],
                "usage": self._usage(answer), "citations": _citations(meta, results), **judged(results),
                "components": meta.get("components", []), "docs_version": meta.get("docs_version"),
                "references": [r.to_api() | {"text": ""} for res in results for r in res.chunks][:50]}

    def _usage(self, answer: str) -> dict:
        prompt = estimate_tokens(self.query) + sum(estimate_tokens(m["content"]) for m in self.history)
        done = estimate_tokens(answer)
        return {"prompt_tokens": prompt, "completion_tokens": done, "total_tokens": prompt + done}


def add_routes(app, indexes: Indexes) -> None:
    from fastapi.responses import JSONResponse, StreamingResponse

    from .http import _status

    def refused(exc: DgragError) -> JSONResponse:
        if isinstance(exc, UnknownIndex):
            return JSONResponse(error_body(str(exc), "invalid_request_error", "model_not_found"), status_code=404)
        status = _status(exc)
        kind = "invalid_request_error" if status < 500 else "server_error"
        return JSONResponse(error_body(str(exc), kind, type(exc).__name__), status_code=status)

    @app.get("/v1/models", tags=["openai"])
    def models() -> dict:
        """One model per index; its id is the index name (the default first)."""
        return {"object": "list", "data": [{"id": row["name"], "object": "model", "created": 0,
                                            "owned_by": "dgrag"} for row in indexes.describe()]}

    @app.get("/v1/models/{model}", tags=["openai"])
    def model(model: str):
        try:
            indexes.get(model)
        except UnknownIndex as exc:
            return refused(exc)
        return {"id": model, "object": "model", "created": 0, "owned_by": "dgrag"}

    @app.post("/v1/chat/completions", tags=["openai"])
    def chat_completions(body: CompletionRequest):
        try:
            completion = Completion(indexes, body)
            if body.stream:
                return StreamingResponse(until_gone(completion.stream), media_type="text/event-stream",
                                         headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
            return completion.whole()
        except DgragError as exc:
            return refused(exc)
