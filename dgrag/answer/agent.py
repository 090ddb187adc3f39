"""The answering agent: rewrite a follow-up, search in rounds (the model reads each search's new
results and decides whether to search again), then stream a Markdown answer over the numbered
references, with the final context's images attached when the chat model can see, and the
citations checked as they stream."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Iterator

from ..config import Settings
from ..core import RetrievalResult, judged
from ..errors import Cancelled, DeadlineExceeded, DgragError, LLMError, QueryRejected
from ..prompts import render
from .book import ContextBook
from .components import build as build_components
from .components import numbered, offline_answer, store_of
from .citations import CitationFilter
from ..backends.chat import chat_llm
from ..core import language_of
from .images import image_parts, wants_images
from .planner import Call, Planner, Round
from .translations import with_counterparts
from .tokens import estimate_tokens, message_tokens

MAX_CALLS_PER_ROUND = 3
_REFUSED_IMAGES: dict[str, str] = {}  # repr of a chat LLM (model, host) -> why it refused image input
STYLES = ("markdown", "short")


@dataclass
class Run:
    """One question's state: what was searched, what the model has seen, what it cost."""
    book: ContextBook
    rounds: list[Round] = field(default_factory=list)
    asked: set[str] = field(default_factory=set)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)
    images: dict = field(default_factory=lambda: {"sent": 0, "skipped": [], "refused": None})
    mode: str = ""
    cancel: threading.Event | None = None  # set: the next step raises Cancelled (Ctrl-C, Stop)
    results: list[RetrievalResult] = field(default_factory=list)  # every search's result, in order


class Answerer:
    def __init__(self, settings: Settings, retriever, llm="auto", style: str = "markdown"):
        """`llm`: an LLM, None for retrieval-only answers, or "auto" (the configured one, if any).
        `style`: "markdown" (cited, for people) or "short" (the answer phrase alone, for scoring)."""
        if style not in STYLES:
            raise DgragError(f"answer style must be one of {', '.join(STYLES)}")
        self.settings = settings
        self.retriever = retriever
        self.llm = chat_llm(settings) if llm == "auto" else llm
        self.style = style

    def answer_once(self, question: str, result: RetrievalResult) -> str:
        """A non-streaming answer over an existing retrieval result (no further searches)."""
        if self.llm is None:
            return "".join(e["text"] for e in self._offline(question, [result]) if e["type"] == "text")
        run = self._new_run()
        run.book.add(result, 1)
        run.results.append(result)
        return "".join(e["text"] for e in self._final(run, question, []) if e["type"] == "text")

    def chat(self, question: str, history: list[dict] | None = None, retrieval_config: dict | None = None,
             use_rag: bool = True, cancel: threading.Event | None = None) -> Iterator[dict]:
        """Events: rewrite?, (retrieval, round)* per search, text*, done (see dgrag.answer).
        `cancel`: once set, the answer raises `Cancelled` at its next step, a model call
        included (see `LLM.complete`); `answer.running.Running` sets it for Ctrl-C and Stop."""
        history = history or []
        query = question
        if self.llm is not None and history:
            query = self._rewrite(question, history, cancel)
            if query != question:
                yield {"type": "rewrite", "query": query}
        if self.llm is None:
            results = []
            if use_rag:
                results.append(self.retriever.search(query, retrieval_config))
                yield {"type": "retrieval", "query": query, "result": results[0]}
            yield from self._offline(query, results)
            return
        run = self._new_run()
        run.cancel = cancel
        if use_rag:
            yield from self._search(run, query, history, retrieval_config)
        yield from self._final(run, query, history, with_context=use_rag)

    def _new_run(self) -> Run:
        return Run(ContextBook(self.settings.chat_context_tokens))

    # ---- without an LLM: the extractive answer (answer/extractive.py), then "Read more" ------------
    def _offline(self, question: str, results: list[RetrievalResult]) -> Iterator[dict]:
        text, meta = offline_answer(question, results, self.retriever.embedder, self.retriever)
        yield {"type": "text", "text": text}
        yield {"type": "done", "answer": text, "meta": meta}

    # ---- rewriting a follow-up -------------------------------------------------------------------
    def _rewrite(self, question: str, history: list[dict], cancel: threading.Event | None = None) -> str:
        turns = "\n".join(f"{m['role']}: {str(m.get('content', ''))[:500]}" for m in history[-6:])
        prompt = render("rewrite", language_of(question), history=turns, question=question)
        try:
            out = self.llm.complete([{"role": "user", "content": prompt}], max_tokens=200, cancel=cancel).strip()
        except LLMError:
            return question  # a failed rewrite must not block the answer
        return out.splitlines()[0].strip().strip('"') if out else question

    # ---- the search rounds -------------------------------------------------------------------------
    def _search(self, run: Run, query: str, history: list[dict], config: dict | None) -> Iterator[dict]:
        planner = Planner(self.llm, language_of(query), max(1, self.settings.chat_max_rounds),
                          (self.settings.chat_tool_mode or "auto").strip().lower(), history, run.cancel)
        for n in range(1, planner.max_rounds + 1):
            t0 = time.perf_counter()
            decision = planner.decide(query, run.rounds, run.book)
            decide_s = time.perf_counter() - t0
            run.prompt_tokens += decision.prompt_tokens
            run.completion_tokens += decision.completion_tokens
            run.mode = decision.mode
            run.notes += [x for x in (decision.note, decision.error and f"round {n}: {decision.error}") if x]
            wanted = [(cid, q) for cid, q in decision.queries if q.casefold() not in run.asked]
            wanted = list({q.casefold(): (cid, q) for cid, q in wanted}.values())[:MAX_CALLS_PER_ROUND]
            if not wanted:
                if n > 1:
                    break
                wanted = [(None, query)]  # the first round always searches, with the question if need be
            calls = []
            for i, (cid, q) in enumerate(wanted):
                call = yield from self._one_search(run, n, q, config, decide_s if i == 0 else 0.0, decision.mode)
                call.id = cid or f"call_{n}_{i}"
                calls.append(call)
            run.rounds.append(Round(n, calls, decision.content))

    def _one_search(self, run: Run, n: int, q: str, config: dict | None, decide_s: float,
                    mode: str) -> Iterator[dict]:
        Cancelled.check(run.cancel)
        t0 = time.perf_counter()
        try:
            result = self.retriever.search(q, config)
        except (QueryRejected, DeadlineExceeded) as exc:
            # a search the model wrote (too long, or past the time left): the answer goes on
            # from what was found, and the model is told why this one gave nothing
            run.asked.add(q.casefold())
            run.notes.append(f"search {q[:80]!r} skipped: {exc}")
            yield {"type": "round", "round": n, "query": q[:200], "mode": mode, "error": str(exc),
                   "counts": {"new": 0, "repeated": 0, "trimmed": len(run.book.trimmed)},
                   "context_tokens": run.book.tokens(),
                   "timing": {"decide_s": round(decide_s, 4), "retrieve_s": round(time.perf_counter() - t0, 4)}}
            return Call("", q, -1)
        retrieve_s = time.perf_counter() - t0
        added = run.book.add(result, n)
        run.results.append(result)
        run.asked.add(q.casefold())
        yield {"type": "retrieval", "query": q, "result": result, "round": n}
        yield {"type": "round", "round": n, "query": q, "mode": mode,
               "counts": {**added.counts, "new": len(added.new), "repeated": added.repeated,
                          "trimmed": len(run.book.trimmed)},
               "context_tokens": run.book.tokens(),
               "timing": {"decide_s": round(decide_s, 4), "retrieve_s": round(retrieve_s, 4)}}
        return Call("", q, run.book.calls - 1, len(added.new), added.repeated)

    # ---- the answer ---------------------------------------------------------------------------------
    def _final(self, run: Run, question: str, history: list[dict], with_context: bool = True) -> Iterator[dict]:
        lang = language_of(question)
        refs = with_counterparts(store_of(self.retriever), run.book.references(), lang) if with_context else []
        text = (f"References:\n\n{run.book.render_numbered() or '(nothing found)'}\n\n"
                f"{_signal(run.results, lang)}Question: {question}" if with_context else question)
        messages = [{"role": "system", "content": render("answer_short" if self.style == "short" else "answer", lang)},
                    *[{"role": m["role"], "content": str(m.get("content", ""))} for m in history[-6:]],
                    {"role": "user", "content": text}]
        parts = self._images(run) if with_context else []
        cite = CitationFilter({r["n"] for r in refs})
        answer: list[str] = []
        for piece in self._stream(run, messages, parts, cite):
            answer.append(piece)
            yield {"type": "text", "text": piece}
        if self.style == "markdown" and refs:
            tail = reference_list(refs, cite.cited, lang)
            answer.append(tail)
            yield {"type": "text", "text": tail}
        meta = self._meta(run, refs, cite)
        # the written answer as the card, the same components around it as without an LLM
        meta["components"] = build_components("".join(answer), sorted(cite.cited), numbered(run.results),
                                              judged(run.results), True, store_of(self.retriever), lang)
        yield {"type": "done", "answer": "".join(answer), "meta": {**meta, **judged(run.results)}}

    def _images(self, run: Run) -> list[dict]:
        if not wants_images(self.settings):
            return []
        earlier = _REFUSED_IMAGES.get(repr(self.llm))
        if earlier:  # this endpoint and model refused images before: not asked again in this process
            run.images.update(refused=f"refused earlier: {earlier}")
            return []
        db_path = getattr(getattr(self.retriever, "handle", None), "path", None) or self.settings.db_path
        parts, skipped = image_parts(self.settings, db_path, [(n, e.item) for n, e in run.book.numbered()])
        run.images.update(sent=sum(p["type"] == "image_url" for p in parts), skipped=skipped)
        return parts

    def _stream(self, run: Run, messages: list[dict], parts: list[dict], cite: CitationFilter) -> Iterator[str]:
        """The answer's text, citations checked. With images attached and refused before the first
        token, once more without them (the reason kept in the metadata). Never raises."""
        if parts:
            messages = [*messages[:-1], {"role": "user", "content": [{"type": "text", "text": messages[-1]["content"]},
                                                                     *parts]}]
        yielded = False
        try:
            run.prompt_tokens += message_tokens(messages)
            for ev in self.llm.stream(messages, cancel=run.cancel):
                if ev["type"] == "text":
                    run.completion_tokens += estimate_tokens(ev["text"])
                    yielded = True
                    out = cite.feed(ev["text"])
                    if out:
                        yield out
        except Cancelled:
            raise  # not an error to show: the caller asked for it
        except LLMError as exc:
            if parts and not yielded:
                run.images.update(refused=str(exc), sent=0)
                if getattr(exc, "reason", "") == "client":  # a 4xx: the request's content, not the moment
                    _REFUSED_IMAGES[repr(self.llm)] = str(exc)
                text_only = [*messages[:-1], {"role": "user", "content": messages[-1]["content"][0]["text"]}]
                yield from self._stream(run, text_only, [], cite)
                return
            yield cite.close() + f"\n\n[LLM error: {exc}]\n\n{run.book.render_numbered()}"
            return
        except DgragError as exc:
            yield cite.close() + f"\n\n[error: {exc}]"
            return
        rest = cite.close()
        if rest:
            yield rest

    def _meta(self, run: Run, refs: list[dict], cite: CitationFilter) -> dict:
        return {"llm": True, "mode": run.mode, "rounds": len(run.rounds),
                "queries": [c.query for r in run.rounds for c in r.calls],
                "references": refs,
                "citations": {"cited": sorted(cite.cited), "removed": len(cite.removed),
                              "removed_numbers": cite.removed},
                "images": dict(run.images),
                "context_tokens": run.book.tokens(), "trimmed": len(run.book.trimmed),
                "tokens": {"prompt": run.prompt_tokens, "completion": run.completion_tokens,
                           "total": run.prompt_tokens + run.completion_tokens},
                "notes": run.notes}


def reference_list(refs: list[dict], cited: list[int], language: str) -> str:
    """The numbered list under the answer: the cited references (all of them when none was cited)."""
    shown = [r for r in refs if r["n"] in set(cited)] or refs
    lines = []
    for r in shown:
        where = _where(r)
        if r.get("counterpart"):  # the same section in the asker's language first (answer/translations.py)
            where = f"{_where(r['counterpart'])} · {where}"
        lines.append(f"[{r['n']}] {where}")
    head = "参考资料" if language == "zh" else "References"
    return f"\n\n**{head}**\n\n" + "\n".join(f"{line}  " for line in lines)


def _where(r: dict) -> str:
    crumb = (r["breadcrumb"] or r["id"]).replace("[", "(").replace("]", ")")
    url = r["source_url"] or ""
    return f"[{crumb}]({url})" if url.startswith(("http://", "https://")) else f"{crumb} (`{url}`)"


def _signal(results: list[RetrievalResult], lang: str) -> str:
    """What the ranking says of the question, for the model: a warning when the docs do not
    seem to cover it (retrieve/confidence.py), nothing otherwise."""
    verdict = judged(results)
    if verdict.get("answerable") is not False:
        return ""
    if lang == "zh":
        return f"检索置信度低（{verdict['confidence']:.2f}）：文档可能没有涉及这个问题。若参考资料无法回答，请先说明这一点。\n\n"
    return (f"Retrieval confidence is low ({verdict['confidence']:.2f}): the docs may not cover this question. "
            "If the references do not answer it, say so first.\n\n")
