"""The agent layer: rewrite a follow-up, search the index in rounds with the chat model deciding
what to search next, then stream a Markdown answer citing [n] against a numbered reference list.

Public entry points (stable; the CLI, the REST API and the UI use these):

    Answerer(settings, retriever, llm="auto", style="markdown").chat(question, history,
             retrieval_config, use_rag)             -> Iterator[event]
    Answerer(...).answer_once(question, result)      -> str (over one retrieval, no further rounds)
    stream_answer(settings, retriever, question, ...) -> Iterator[event]
    answer(settings, retriever, question, ...)        -> {"answer", "meta", "results", "events"}

Events, in order:
    {"type": "rewrite", "query"}                      a follow-up rewritten (LLM and history only)
    {"type": "retrieval", "query", "result", "round"} one search's result (references first): a
                                                      RetrievalResult (dgrag.core; .to_api() is its JSON)
    {"type": "round", "round", "query", "mode", "counts": {chunks, codes, tables, images, new,
     repeated, trimmed}, "context_tokens", "timing": {decide_s, retrieve_s}}   (LLM only)
    {"type": "text", "text"}                          answer deltas, citations already checked
    {"type": "done", "answer", "meta"}                meta: rounds, queries, mode, references,
     citations {cited, removed, removed_numbers}, images {sent, skipped, refused}, context_tokens,
     trimmed, tokens {prompt, completion, total} (estimates), notes

With no LLM configured (or llm=None, the API's use_llm false) the question is searched once and
the answer is the extractive one (the cited sentences that answer, then Read more); there are no
round events.
"""
from __future__ import annotations

from typing import Iterator

from ..backends.chat import chat_llm
from ..config import Settings
from ..core import language_of
from .agent import Answerer, reference_list
from .book import ContextBook
from .citations import CitationFilter, check_citations
from .planner import RETRIEVE_TOOL

__all__ = ["Answerer", "stream_answer", "answer", "chat_llm", "language_of", "RETRIEVE_TOOL", "ContextBook",
           "CitationFilter", "check_citations", "reference_list"]


def stream_answer(settings: Settings, retriever, question: str, history: list[dict] | None = None,
                  retrieval_config: dict | None = None, use_rag: bool = True, llm="auto",
                  style: str = "markdown") -> Iterator[dict]:
    """The events of one question (see above)."""
    return Answerer(settings, retriever, llm=llm, style=style).chat(question, history, retrieval_config, use_rag)


def answer(settings: Settings, retriever, question: str, history: list[dict] | None = None,
           retrieval_config: dict | None = None, use_rag: bool = True, llm="auto", style: str = "markdown") -> dict:
    """One question answered in full: the answer, its metadata, every search's result, all events."""
    events = list(stream_answer(settings, retriever, question, history, retrieval_config, use_rag, llm, style))
    done = events[-1]
    return {"answer": done["answer"], "meta": done.get("meta", {}), "events": events,
            "results": [e["result"] for e in events if e["type"] == "retrieval"]}
