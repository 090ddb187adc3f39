"""REST API, compatible with the seed's: POST /chat, POST /retrieve, GET /health, plus a
streaming chat (references first, then the text) and the index's images.

Bodies and responses are pydantic models (documented at /docs); a wrong type is a 422 that
names the field. Every request's work is bounded: the body size (413), the query's length
(422), the retrieval parameters' ranges (422) and its time (504); with a rate limit set,
one client's calls per window (429), and its answers running at once (429); requests open
per client and the connections themselves are bounded too (connections.py).
"""
from __future__ import annotations

import json
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..core import chat_to_api, judged
from ..errors import ConfigError, DgragError
from .connections import PerClient
from .http import _send_error, _status, client_key  # noqa: F401 - the edge's error statuses, shared with /mcp and /v1
from .indexes import Indexes
from .leaving import until_gone
from .service import Service

# ---- request and response models ---------------------------------------------------------------
_QUERY = Field(..., description="The question, in Chinese or English (at most max_query_chars characters and "
                                "max_query_tokens tokens).", examples=["ACE Tools 怎么创建应用？"])
_CONFIG = Field(None, description="Per-request overrides of the retrieval parameters, e.g. "
                                  '{"final_chunk_k": 5, "method": "ppr"}: the names and ranges of the retrieval '
                                  "parameters in docs/configuration.md; an unknown name or a value out of range is "
                                  "a 422.",
                examples=[{"final_chunk_k": 5}])


_INDEX = Field(None, description="which index answers (its name, as /health lists them); omitted: the default",
               max_length=200)


class Message(BaseModel):
    role: str = Field(..., description="user or assistant (other roles are ignored)")
    content: str = ""


class RetrieveRequest(BaseModel):
    # a field the API does not know is refused, not ignored: `config` for `retrieval_config` would
    # otherwise answer with the defaults and say nothing
    model_config = ConfigDict(extra="forbid")
    query: str = _QUERY
    index: str | None = _INDEX
    retrieval_config: dict[str, Any] | None = _CONFIG


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")  # as RetrieveRequest
    query: str = _QUERY
    index: str | None = _INDEX
    use_rag: bool = Field(True, description="retrieve context from the index")
    use_llm: bool = Field(True, description="write an answer with the configured LLM (without one, the "
                                            "extractive answer: cited sentences, Read more)")
    retrieval_config: dict[str, Any] | None = _CONFIG
    history: list[Message] = Field(default_factory=list, description="earlier turns, oldest first (the last 12 "
                                                                     "are kept; the model reads the last 6)")


class Contribution(BaseModel):
    feature: str = Field(..., description="a feature of the ranking (retrieve/ranking.py REGISTRY)")
    weight: float = Field(..., description="its weight, rank_w_<feature>")
    value: float = Field(..., description="its value for this section")
    contribution: float = Field(..., description="weight x value")


class Why(BaseModel):
    """What ranked a section (the default method, with retrieval_config {"verbose": true})."""

    model_config = ConfigDict(extra="allow")
    score: float = Field(..., description="the score that ranked it: the sum of the contributions")
    placed_by: str = Field(..., description="score | first_without_bridge | ppr (a place given to the PPR walk)")
    contributions: list[Contribution] = Field(..., description="the features that made the score, largest first")
    reranked_by: str | None = Field(None, description="the final rerank that reordered the results, if any")


class Item(BaseModel):
    """One retrieved node (chunk, code block, table or image)."""

    model_config = ConfigDict(extra="allow")
    id: str = Field(..., description="node ID, cited in answers")
    type: str = Field(..., description="chunk | code | table | image")
    score: float
    breadcrumb: str = Field(..., description='the heading path, "H1 / H2 / H3"')
    source_url: str
    source_path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    language: str | None = None
    summary: str = ""
    text: str = ""
    image_url: str | None = Field(None, description="images only: /images/{sha256}")
    why: Why | None = Field(None, description='sections, with retrieval_config {"verbose": true}: what ranked it')


class Reference(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: str = Field(..., description="node ID (for programs; never shown to a person)")
    type: str
    title: str | None = Field(None, description="the page's title")
    breadcrumb: str | None = None
    source_url: str | None = None
    score: float | None = None
    image_url: str | None = None


class Timing(BaseModel):
    """Seconds per stage."""

    model_config = ConfigDict(extra="allow")
    stage1_query_embedding: float = Field(0.0, description="embedding the query")
    stage1_recall: float = Field(0.0, description="vector recall on the fact, file and chunk routes, exact entity names")
    stage2_rerank: float = 0.0
    stage3_spread: float = Field(0.0, description="stage 3 (the diffusion, ppr or dense): the seed API's name for it, "
                                                   "kept for its clients")
    stage4_final_rerank: float = 0.0
    stage4_merge: float = 0.0
    rag_total: float = 0.0


class ChatTiming(Timing):
    llm: float = 0.0
    total: float = 0.0


class RetrieveResponse(BaseModel):
    model_config = ConfigDict(extra="allow")
    query: str = Field(..., description="the query as answered (stripped; NULs and lone surrogates replaced)")
    method: str
    rag_context: str = Field(..., description="the merged Markdown context (also as `context`)")
    context: str
    rag_chunks_count: int
    rag_codes_count: int
    rag_tables_count: int
    rag_images_count: int
    chunks: list[Item]
    codes: list[Item]
    tables: list[Item]
    images: list[Item]
    timing: Timing
    trace: dict[str, Any] | None = Field(None, description='with retrieval_config {"verbose": true}')
    answerable: bool | None = Field(None, description="whether the docs seem to cover the query")
    confidence: float | None = Field(None, description="0..1; 0.5 at the index's calibrated threshold")
    note: str | None = Field(None, description="a word on the method: ppr is an experimental comparison")


class ChatResponse(BaseModel):
    model_config = ConfigDict(extra="allow")
    query: str
    rag_context: str
    llm_response: str
    rag_chunks_count: int
    rag_codes_count: int
    rag_tables_count: int
    rag_images_count: int
    references: list[Reference]
    timing: ChatTiming
    meta: dict[str, Any] = Field(default_factory=dict, description="the answer's rounds, citations, tokens, images")
    answerable: bool | None = Field(None, description="whether the docs seem to cover the question")
    confidence: float | None = Field(None, description="0..1; 0.5 at the index's calibrated threshold")
    components: list[dict[str, Any]] = Field(default_factory=list, description=(
        "the answer as components: answer card, api card, code, table, image, sources, followups "
        "(docs/answers.md)"))
    answer_id: str | None = Field(None, description="this answer's id, for POST /feedback")


class IndexInfo(BaseModel):
    embedding_model: str | None = None
    embedding_dim: int | None = None
    schema_version: int | None = None
    dgrag_version: str | None = Field(None, description="the dgrag that last wrote the file")
    docs_root: str | None = None
    url_template: str | None = None


class Health(BaseModel):
    model_config = ConfigDict(extra="allow")
    status: str
    index_path: str
    index_exists: bool
    index_loaded: bool
    hipporag_initialized: bool = Field(..., description="the seed's name for index_loaded")
    read_only: bool
    index: IndexInfo | None = Field(None, description="what the served file is (model, dimension, schema, "
                                                      "writer, docs)")
    limits: dict[str, Any] = Field(default_factory=dict, description="what one request may ask for")
    docs_version: dict[str, Any] = Field(default_factory=dict, description=(
        "what the answers come from: pages, indexed_at, and the repo, branch, commit and commit_time of "
        "`dgrag sync` (null for a folder indexed by `dgrag index`)"))


class ErrorBody(BaseModel):
    error: str
    type: str


_ERRORS = {413: {"model": ErrorBody, "description": "body larger than max_body_bytes"},
           422: {"model": ErrorBody, "description": "a field of the wrong type, a query too long, a retrieval "
                                                    "parameter unknown or out of range"},
           429: {"model": ErrorBody, "description": "too many calls from this client (rate_limit)"},
           504: {"model": ErrorBody, "description": "the request ran past request_timeout_s"}}


def build_api(served: Service | Indexes):
    """The REST API over one service or several indexes, with the MCP tools (/mcp) and the
    OpenAI-compatible routes (/v1)."""
    from fastapi import FastAPI, Header
    from fastapi.responses import JSONResponse, RedirectResponse, Response, StreamingResponse

    from . import feedback, mcp_tools, openai_compat, widget

    indexes = served if isinstance(served, Indexes) else Indexes.of(served)
    service = indexes.service
    mcp = mcp_tools.McpEndpoint(indexes)
    app = FastAPI(title="dgrag", description="DualGraph RAG over Markdown docs: the seed's REST API",
                  docs_url="/docs", redoc_url=None, lifespan=lambda _app: mcp.running())
    settings = service.settings
    limiter = make_limiter(service)
    app.add_middleware(BoundedRequests, max_bytes=settings.max_body_bytes, limiter=limiter)
    app.add_middleware(PerClient, requests=settings.max_connections_per_client,  # counts every request
                       answers=settings.max_answers_per_client if limiter is not None else 0)
    # outermost: another site's page is refused before it costs anything, and a 429 carries CORS
    app.add_middleware(widget.WidgetCors, origins=settings.widget_origins)

    _error_handlers(app)

    @app.get("/api/docs", include_in_schema=False)
    def old_docs():
        return RedirectResponse("/docs")

    @app.get("/health", response_model=Health)
    def health() -> dict:
        return {**service.health(), "default_index": indexes.default, "indexes": indexes.describe()}

    @app.post("/retrieve", response_model=RetrieveResponse, responses=_ERRORS)
    def retrieve(body: RetrieveRequest) -> dict:
        return indexes.get(body.index).retrieve(body.query, body.retrieval_config)  # RetrievalResult.to_api()

    @app.post("/chat", response_model=ChatResponse, responses=_ERRORS)
    def chat(body: ChatRequest) -> dict:
        return indexes.get(body.index).chat(body.query, use_rag=body.use_rag, use_llm=body.use_llm,
                                            config=body.retrieval_config, history=_history(body))

    @app.post("/chat/stream", responses={200: {"content": {"application/x-ndjson": {}},
                                               "description": "NDJSON events: references (per search), round "
                                                              "(with an LLM), text deltas, done (timing, "
                                                              "llm_response, meta), or error"}, **_ERRORS})
    def chat_stream(body: ChatRequest, x_dgrag_channel: str | None = Header(None, include_in_schema=False)):
        # refused with a status, not mid-stream; the checked values pass down unchecked
        chosen = indexes.get(body.index)
        query, config = chosen.admit(body.query, body.retrieval_config)
        history = _history(body)
        channel = widget.channel_of(x_dgrag_channel, "rest")

        def produce(cancel):  # in a worker thread; the client leaving sets `cancel` (leaving.py)
            return _ndjson(query, chosen.chat_events(query, history, body.use_rag, body.use_llm, config, cancel=cancel,
                                                     channel=channel))

        return StreamingResponse(until_gone(produce), media_type="application/x-ndjson")

    @app.get("/images/{sha}")
    def image(sha: str, index: str | None = None):
        if not sha.isalnum() or len(sha) != 64:
            return JSONResponse({"error": "bad image id"}, status_code=400)
        found = _image(indexes, sha, index)
        if found is None:
            return JSONResponse({"error": "no such image"}, status_code=404)
        data, fmt = found
        mime = {"jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "png": "image/png",
                "webp": "image/webp", "bmp": "image/bmp"}.get((fmt or "png").lower(), "application/octet-stream")
        return Response(data, media_type=mime, headers={"Cache-Control": "public, max-age=86400",
                                                        "X-Content-Type-Options": "nosniff"})

    feedback.add_route(app, indexes, _ERRORS)
    widget.add_route(app)
    mcp_tools.mount(app, mcp)
    openai_compat.add_routes(app, indexes)
    return app


def _error_handlers(app) -> None:
    """A typed error is its status with a one-line message; a wrong field names the field."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    @app.exception_handler(DgragError)
    async def _dgrag_error(_request: Request, exc: DgragError):
        return JSONResponse({"error": str(exc), "type": type(exc).__name__}, status_code=_status(exc))

    @app.exception_handler(_TooLarge)
    async def _too_large(_request: Request, exc):
        return JSONResponse({"error": exc.detail, "type": "RequestTooLarge"}, status_code=413)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError):
        errors = [{"loc": [str(p) for p in e["loc"]], "msg": str(e["msg"]), "type": str(e["type"])}
                  for e in exc.errors()[:20]]  # not the input: it can be large, and is the client's own
        problems = [f"{'.'.join(p for p in e['loc'] if p != 'body') or 'body'}: {e['msg']}" for e in errors]
        return JSONResponse({"error": "; ".join(problems)[:1000], "type": "RequestValidationError",
                             "detail": errors}, status_code=422)


def _image(indexes: Indexes, sha: str, index: str | None):
    """An image's bytes from the named index, else from the first index that has it (an image's
    id is its content's hash: the same id is the same image in any file)."""
    from ..store import Store

    for svc in [indexes.get(index)] if index else [s for _, s in indexes]:
        with Store(svc.settings.db_path, readonly=True) as st:
            found = st.images.data(sha)
        if found is not None:
            return found
    return None


def _history(body: ChatRequest) -> list[dict]:
    return [{"role": m.role, "content": _clean(m.content)} for m in body.history
            if m.role in ("user", "assistant")][-12:]


def _clean(text: str) -> str:
    return text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")


def _ndjson(query: str, events):
    """One JSON object a line: `references` (as soon as a search ends) then `round` (with an LLM),
    per search; `text` deltas; `done` (with the answer's `meta`: citations, rounds, tokens, images)."""
    t0 = time.perf_counter()
    results = []
    try:
        for ev in events:
            if ev["type"] == "retrieval":
                results.append(ev["result"])
                payload = chat_to_api(query, [ev["result"]], "", time.perf_counter() - t0)
                payload.pop("llm_response")
                yield json.dumps({"type": "references", "query": ev["query"], **payload}, ensure_ascii=False) + "\n"
            elif ev["type"] in ("text", "rewrite", "round"):  # round: one search of the agent (query, counts, timing)
                yield json.dumps(ev, ensure_ascii=False) + "\n"
            elif ev["type"] == "done":
                final = chat_to_api(query, results, ev["answer"], time.perf_counter() - t0)
                yield json.dumps({"type": "done", "timing": final["timing"], "llm_response": ev["answer"],
                                  "answer_id": ev.get("answer_id"), "meta": ev.get("meta", {}), **judged(results),
                                  "components": ev.get("meta", {}).get("components", [])},
                                 ensure_ascii=False) + "\n"
    except DgragError as exc:
        yield json.dumps({"type": "error", "error": str(exc), "error_type": type(exc).__name__}) + "\n"


# ---- bounded requests: body size and per-client rate ------------------------------------------
# the calls that do work: the REST answers (bodies up to max_body_bytes) and the UI's events
# (bodies carry the whole conversation: up to UI_BODY_BYTES); uploads have their own limit
_WORK_PATHS = ("/retrieve", "/chat", "/chat/stream", "/v1/chat/completions", "/mcp", "/feedback")
_UI_PREFIX = "/gradio_api/"
_UI_EXEMPT = ("/gradio_api/upload",)
UI_BODY_BYTES = 4 * 1024 * 1024
_DRAIN_LIMIT = 8 * 1024 * 1024  # an oversized body is read and dropped up to this, so the client sees the 413


def _body_limit(path: str, rest_bytes: int) -> int | None:
    """The body limit of a POST to `path`; None: not a call that does work here."""
    path = path.rstrip("/") or "/"
    if path in _WORK_PATHS:
        return rest_bytes
    if path.startswith(_UI_PREFIX) and not path.startswith(_UI_EXEMPT):
        return max(UI_BODY_BYTES, rest_bytes)
    return None


def _too_large_error():
    from fastapi import HTTPException

    class TooLarge(HTTPException):
        """Raised from `receive` once a body without Content-Length passes its limit: an
        HTTPException, which FastAPI passes on (any other error reading a body becomes a 400)."""

        def __init__(self, message: str):
            super().__init__(status_code=413, detail=message)

    return TooLarge


_TooLarge = _too_large_error()


class BoundedRequests:
    """ASGI middleware: a POST body over its limit to a path that does work is a 413 (by its
    Content-Length before anything is read, or as soon as a chunked body passes the limit);
    with a limiter, a client over its rate is a 429."""

    def __init__(self, app, max_bytes: int, limiter=None):
        self.app, self.max_bytes, self.limiter = app, int(max_bytes), limiter

    async def __call__(self, scope, receive, send):
        limit = _body_limit(scope["path"], self.max_bytes) if scope["type"] == "http" and scope["method"] in (
            "POST", "PUT", "PATCH") else None
        if limit is None:
            return await self.app(scope, receive, send)
        if self.limiter is not None:
            retry = self.limiter.check(client_key(scope))
            if retry is not None:
                return await _send_error(send, 429, f"too many requests from this client; retry in {retry} s",
                                         "RateLimited", {"retry-after": str(retry)})
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            if length.isdigit() and int(length) <= _DRAIN_LIMIT:
                await _drain(receive)
            return await _send_error(send, 413, self._message(limit), "RequestTooLarge")
        seen = 0
        started = False

        async def bounded_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge(self._message(limit))
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, bounded_receive, tracking_send)
        except _TooLarge as exc:  # when no handler inside the app turned it into the answer
            if not started:
                await _send_error(send, 413, exc.detail, "RequestTooLarge")

    def _message(self, limit: int) -> str:
        what = "max_body_bytes" if limit == self.max_bytes else "the UI's limit"
        return f"the request body is larger than {limit} bytes ({what})"


async def _drain(receive) -> None:
    more = True
    while more:
        message = await receive()
        more = message["type"] == "http.request" and message.get("more_body", False)


class RateLimiter:
    """Calls per client and window (`limits`' moving window, in memory: one process)."""

    def __init__(self, spec: str):
        try:
            from limits import parse
            from limits.storage import MemoryStorage
            from limits.strategies import MovingWindowRateLimiter
        except ImportError as exc:
            raise ConfigError("rate_limit needs the `limits` package (pip install limits)") from exc
        try:
            self.item = parse(spec)
        except ValueError as exc:
            raise ConfigError(f"rate_limit: cannot read {spec!r} (e.g. 60/minute)") from exc
        self.spec = spec
        self._limiter = MovingWindowRateLimiter(MemoryStorage())

    def check(self, key: str) -> int | None:
        """None if the call may go ahead (and counts it), else seconds until it may."""
        if self._limiter.hit(self.item, key):
            return None
        reset = self._limiter.get_window_stats(self.item, key).reset_time
        return max(1, int(reset - time.time() + 0.999))


DEFAULT_PUBLIC_RATE = "60/minute"  # a read-only (public) demo with no rate_limit set


def make_limiter(service: Service) -> RateLimiter | None:
    """The rate limit: rate_limit when set ("off" for none); a read-only demo (admin secret set,
    as on a public Space) gets DEFAULT_PUBLIC_RATE; a local app, none."""
    spec = service.settings.rate_limit.strip()
    if spec.lower() in ("off", "none", "0"):
        return None
    if not spec:
        spec = DEFAULT_PUBLIC_RATE if service.read_only else ""
    return RateLimiter(spec) if spec else None
