"""The agent layer: rewrite a follow-up, let the chat LLM call retrieval as a tool (possibly
several times), stream an answer that cites node IDs and source URLs.

Events of `Answerer.chat(...)`, in order: {"type": "rewrite", "query"} (when rewritten),
{"type": "retrieval", "query", "result"} per retrieval (references first), then
{"type": "text", "text"} deltas, then {"type": "done", "answer"}.
With no LLM configured, the retrieved context is returned and the answer says so.
"""
from __future__ import annotations

import json
import re
import threading
from typing import Iterator

from .config import Settings
from .errors import DgragError, LLMError
from .prompts import render

MAX_TOOL_ROUNDS = 3
_CJK = re.compile(r"[\u3400-\u9fff]")

RETRIEVE_TOOL = {
    "type": "function",
    "function": {
        "name": "retrieve",
        "description": "Search the indexed documentation (text, code blocks, tables, images). Call it once per "
                       "sub-question; for a multi-part or cross-file question call it several times.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}


def language_of(text: str) -> str:
    return "zh" if _CJK.search(text or "") else "en"


_CHAT_LLMS: dict[tuple, object] = {}
_CHAT_LLMS_LOCK = threading.Lock()


def chat_llm(settings: Settings, cache=None):
    """The chat LLM (chat_* settings, else the llm_* ones), or None when none is configured.
    One client per configuration, kept: it is thread-safe, and building one (and its
    connection pool) per question costs tens of milliseconds and a new connection."""
    from .backends.llm import LLM

    base = settings.chat_base_url or settings.llm_base_url
    model = settings.chat_model or settings.llm_model
    if not base or not model:
        return None
    kw = dict(timeout_s=settings.llm_timeout_s, max_retries=settings.llm_max_retries, backoff_s=settings.llm_backoff_s,
              max_tokens=settings.max_new_tokens, temperature=settings.temperature)
    if cache is not None:
        return LLM(base, model, settings.llm_api_key, cache=cache, **kw)
    key = (base, model, settings.llm_api_key, *sorted(kw.items()))
    with _CHAT_LLMS_LOCK:
        if key not in _CHAT_LLMS:
            _CHAT_LLMS[key] = LLM(base, model, settings.llm_api_key, **kw)
        return _CHAT_LLMS[key]


class Answerer:
    def __init__(self, settings: Settings, retriever, llm="auto"):
        """`llm`: an LLM, None for retrieval-only answers, or "auto" (the configured one, if any)."""
        self.settings = settings
        self.retriever = retriever
        self.llm = chat_llm(settings) if llm == "auto" else llm

    def answer_once(self, question: str, result: dict) -> str:
        """A non-streaming answer over an existing retrieval result."""
        return "".join(e["text"] for e in self._answer_events(question, [], [result]) if e["type"] == "text")

    def chat(self, question: str, history: list[dict] | None = None, retrieval_config: dict | None = None,
             use_rag: bool = True) -> Iterator[dict]:
        history = history or []
        query = question
        if self.llm is not None and history:
            query = self._rewrite(question, history)
            if query != question:
                yield {"type": "rewrite", "query": query}
        results = []
        if use_rag:
            for q in self._plan(query, history, retrieval_config):
                result = self.retriever.retrieve(q, retrieval_config)
                results.append(result)
                yield {"type": "retrieval", "query": q, "result": result}
        answer = []
        for ev in self._answer_events(query, history, results):
            if ev["type"] == "text":
                answer.append(ev["text"])
            yield ev
        yield {"type": "done", "answer": "".join(answer)}

    # ---- steps --------------------------------------------------------------------------
    def _rewrite(self, question: str, history: list[dict]) -> str:
        turns = "\n".join(f"{m['role']}: {str(m.get('content', ''))[:500]}" for m in history[-6:])
        prompt = render("rewrite", language_of(question), history=turns, question=question)
        try:
            out = self.llm.complete([{"role": "user", "content": prompt}], max_tokens=200).strip()
        except LLMError:
            return question  # a failed rewrite must not block the answer
        return out.splitlines()[0].strip().strip('"') if out else question

    def _plan(self, query: str, history: list[dict], retrieval_config) -> list[str]:
        """The LLM chooses what to retrieve through the tool; without one, the query itself."""
        if self.llm is None:
            return [query]
        messages = [{"role": "system", "content": "You answer questions about technical documentation. "
                     "Use the retrieve tool to search it before answering."},
                    *[{"role": m["role"], "content": str(m.get("content", ""))} for m in history[-6:]],
                    {"role": "user", "content": query}]
        queries: list[str] = []
        try:
            reply = self.llm.chat_with_tools(messages, [RETRIEVE_TOOL])
        except LLMError:
            return [query]
        for call in reply.get("tool_calls") or []:
            try:
                q = json.loads(call.get("arguments") or "{}").get("query")
            except ValueError:
                q = None
            if isinstance(q, str) and q.strip() and q not in queries:
                queries.append(q.strip())
        return queries[:MAX_TOOL_ROUNDS] or [query]

    def _answer_events(self, question: str, history: list[dict], results: list[dict]) -> Iterator[dict]:
        context = "\n\n".join(r["context"] for r in results if r.get("context"))
        if self.llm is None:
            lang = language_of(question)
            note = ("未配置 LLM：以下是检索到的相关文档内容。\n\n" if lang == "zh"
                    else "No LLM is configured: here is the retrieved context.\n\n")
            yield {"type": "text", "text": note + (context or "(nothing found)")}
            return
        system = render("answer", language_of(question))
        messages = [{"role": "system", "content": system},
                    *[{"role": m["role"], "content": str(m.get("content", ""))} for m in history[-6:]],
                    {"role": "user", "content": f"Context:\n\n{context}\n\nQuestion: {question}"}]
        try:
            for ev in self.llm.stream(messages):
                if ev["type"] == "text":
                    yield ev
        except LLMError as exc:
            yield {"type": "text", "text": f"\n\n[LLM error: {exc}]\n\n{context}"}
        except DgragError as exc:
            yield {"type": "text", "text": f"\n\n[error: {exc}]"}
