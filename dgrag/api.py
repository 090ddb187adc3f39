"""REST API, compatible with the seed's: POST /chat, POST /retrieve, GET /health, plus a
streaming chat (references first, then the text) and the index's images."""
from __future__ import annotations

import json
import time
from typing import Any

from .errors import AccessDenied, ConfigError, DgragError, IndexFileError
from .service import Service, chat_response


def _status(exc: DgragError) -> int:
    if isinstance(exc, AccessDenied):
        return 403
    if isinstance(exc, ConfigError):
        return 422
    if isinstance(exc, IndexFileError):
        return 503
    return 400


def build_api(service: Service):
    from fastapi import Body, FastAPI, Request
    from fastapi.responses import JSONResponse, Response, StreamingResponse

    app = FastAPI(title="dgrag", description="DualGraph RAG over Markdown docs", docs_url="/api/docs")

    @app.exception_handler(DgragError)
    async def _dgrag_error(_request: Request, exc: DgragError):
        return JSONResponse({"error": str(exc), "type": type(exc).__name__}, status_code=_status(exc))

    @app.get("/health")
    def health() -> dict:
        return service.health()

    @app.post("/retrieve")
    def retrieve(body: dict = Body(...)) -> dict:
        query, config = _query(body)
        res = service.retrieve(query, config)
        return {**res, "rag_context": res["context"], "rag_chunks_count": len(res["chunks"]),
                "rag_codes_count": len(res["codes"]), "rag_tables_count": len(res["tables"]),
                "rag_images_count": len(res["images"])}

    @app.post("/chat")
    def chat(body: dict = Body(...)) -> dict:
        query, config = _query(body)
        return service.chat(query, use_rag=bool(body.get("use_rag", True)), use_llm=bool(body.get("use_llm", True)),
                            config=config, history=_history(body))

    @app.post("/chat/stream")
    def chat_stream(body: dict = Body(...)):
        query, config = _query(body)
        events = service.chat_events(query, _history(body), bool(body.get("use_rag", True)),
                                     bool(body.get("use_llm", True)), config)
        return StreamingResponse(_ndjson(query, events), media_type="application/x-ndjson")

    @app.get("/images/{sha}")
    def image(sha: str):
        from .store import Store

        if not sha.isalnum() or len(sha) != 64:
            return JSONResponse({"error": "bad image id"}, status_code=400)
        with Store(service.settings.db_path, readonly=True) as st:
            found = st.image_bytes(sha)
        if found is None:
            return JSONResponse({"error": "no such image"}, status_code=404)
        data, fmt = found
        mime = {"jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "png": "image/png",
                "webp": "image/webp", "bmp": "image/bmp"}.get((fmt or "png").lower(), "application/octet-stream")
        return Response(data, media_type=mime, headers={"Cache-Control": "public, max-age=86400",
                                                        "X-Content-Type-Options": "nosniff"})

    return app


def _query(body: Any) -> tuple[str, dict | None]:
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        raise DgragError('the body must be JSON with a "query" string')
    config = body.get("retrieval_config")
    if config is not None and not isinstance(config, dict):
        raise ConfigError("retrieval_config must be an object")
    return body["query"], config


def _history(body: dict) -> list[dict]:
    hist = body.get("history") or []
    return [h for h in hist if isinstance(h, dict) and h.get("role") in ("user", "assistant")][-12:]


def _ndjson(query: str, events):
    """One JSON object a line: `references` (as soon as a search ends) then `round` (with an LLM),
    per search; `text` deltas; `done` (with the answer's `meta`: citations, rounds, tokens, images)."""
    t0 = time.perf_counter()
    results = []
    try:
        for ev in events:
            if ev["type"] == "retrieval":
                results.append(ev["result"])
                payload = chat_response(query, [ev["result"]], "", time.perf_counter() - t0)
                payload.pop("llm_response")
                yield json.dumps({"type": "references", "query": ev["query"], **payload}, ensure_ascii=False) + "\n"
            elif ev["type"] in ("text", "rewrite", "round"):  # round: one search of the agent (query, counts, timing)
                yield json.dumps(ev, ensure_ascii=False) + "\n"
            elif ev["type"] == "done":
                final = chat_response(query, results, ev["answer"], time.perf_counter() - t0)
                yield json.dumps({"type": "done", "timing": final["timing"], "llm_response": ev["answer"],
                                  "meta": ev.get("meta", {})}, ensure_ascii=False) + "\n"
    except DgragError as exc:
        yield json.dumps({"type": "error", "error": str(exc)}) + "\n"
