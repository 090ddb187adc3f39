"""One decision of the retrieval loop: after reading what its searches found, does the chat model
search again (and for what), or is it ready to answer?

Two ways to ask: the `retrieve` tool (tool calls, with each search's results sent back as tool
messages), or, for models without tool calling, a JSON reply (`{"retrieve": "..."}` or
`{"done": true}`) with the results written into the user message. `auto` asks with the tool and
switches to JSON replies for the rest of the conversation when the endpoint refuses tools.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

from ..errors import ConfigError, LLMError
from ..prompts import render
from .book import ContextBook, render_item
from .tokens import estimate_tokens, message_tokens

RETRIEVE_TOOL = {
    "type": "function",
    "function": {
        "name": "retrieve",
        "description": "Search the indexed documentation (text, code blocks, tables, images). Returns only results "
                       "not shown before. Call it again with a new query to follow up on what you found.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "what to look for"}},
                       "required": ["query"]},
    },
}
MODES = ("auto", "tools", "json")


@dataclass
class Call:
    id: str
    query: str
    book_call: int  # the ContextBook call that holds its results
    new: int = 0
    repeated: int = 0


@dataclass
class Round:
    number: int
    calls: list[Call]
    content: str | None = None


@dataclass
class Decision:
    queries: list[tuple[str | None, str]]  # (tool call id or None, query)
    mode: str
    content: str | None = None
    note: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str = ""


@dataclass
class Planner:
    llm: object
    language: str
    max_rounds: int
    mode: str = "auto"
    history: list[dict] = field(default_factory=list)
    cancel: threading.Event | None = None  # passed to every model call (Cancelled is no LLMError)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ConfigError(f"chat_tool_mode must be one of {', '.join(MODES)}")

    def decide(self, question: str, rounds: list[Round], book: ContextBook) -> Decision:
        """The model's next searches ([] = ready to answer). A failed call is an empty decision
        with `error` set; tools refused by the endpoint (HTTP 4xx) switch `auto` to JSON."""
        note = ""
        if self.mode in ("auto", "tools"):
            try:
                return self._with_tools(question, rounds, book)
            except LLMError as exc:
                if self.mode == "tools" or getattr(exc, "reason", "") != "client":
                    return Decision([], "tools", error=str(exc))
                self.mode, note = "json", f"tool calls refused ({exc}); asking for JSON replies instead"
        try:
            decision = self._with_json(question, rounds, book)
        except LLMError as exc:
            return Decision([], "json", note=note, error=str(exc))
        decision.note = note
        return decision

    # ---- tool calls ---------------------------------------------------------------------------
    def _with_tools(self, question: str, rounds: list[Round], book: ContextBook) -> Decision:
        messages = self._head("agent", question)
        for r in rounds:
            messages.append({"role": "assistant", "content": r.content, "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": "retrieve", "arguments": json.dumps({"query": c.query}, ensure_ascii=False)}}
                for c in r.calls]})
            messages += [{"role": "tool", "tool_call_id": c.id, "content": call_results(book, c)} for c in r.calls]
        reply = self.llm.chat_with_tools(messages, [RETRIEVE_TOOL], cancel=self.cancel)
        queries: list[tuple[str | None, str]] = []
        for call in reply.get("tool_calls") or []:
            q = _query_of(call)
            if call.get("name") == "retrieve" and q:
                queries.append((call.get("id"), q))
        if not queries:  # a model that writes its call as JSON text instead
            queries = [(None, q) for q in queries_from_json(reply.get("content"))]
        completion = (reply.get("content") or "") + json.dumps(reply.get("tool_calls") or [])
        mode = "tools" if self.mode == "auto" else self.mode
        return Decision(queries, mode, reply.get("content"), prompt_tokens=message_tokens(messages),
                        completion_tokens=estimate_tokens(completion))

    # ---- JSON replies -------------------------------------------------------------------------
    def _with_json(self, question: str, rounds: list[Round], book: ContextBook) -> Decision:
        messages = self._head("agent_json", question)
        if rounds:
            searches = [f"Search {i}: \"{c.query}\"\n\n{call_results(book, c)}"
                        for i, c in enumerate((c for r in rounds for c in r.calls), 1)]
            messages[-1]["content"] += "\n\nSearches so far:\n\n" + "\n\n".join(searches)
        reply = self.llm.complete(messages, json_mode=True, max_tokens=300, cancel=self.cancel)
        return Decision([(None, q) for q in queries_from_json(reply)], "json", None,
                        prompt_tokens=message_tokens(messages), completion_tokens=estimate_tokens(reply))

    def _head(self, prompt: str, question: str) -> list[dict]:
        return [{"role": "system", "content": render(prompt, self.language, max_rounds=self.max_rounds)},
                *[{"role": m["role"], "content": str(m.get("content", ""))} for m in self.history[-6:]],
                {"role": "user", "content": f"Question: {question}"}]


def call_results(book: ContextBook, call: Call) -> str:
    """What one search returned, as the model reads it: only what it had not seen before."""
    entries = book.of_call(call.book_call)
    if entries:
        return "\n\n".join(render_item(e.ref) for e in entries)
    if call.repeated:
        return f"No new results: the {call.repeated} results of this search were already shown above."
    return "Nothing found."


def _query_of(call: dict) -> str:
    try:
        args = json.loads(call.get("arguments") or "{}")
    except ValueError:
        return ""
    q = args.get("query") if isinstance(args, dict) else None
    return q.strip() if isinstance(q, str) else ""


def queries_from_json(text: str | None) -> list[str]:
    """The searches asked for in a JSON reply ({"retrieve": "q" | ["q", ...]}); [] otherwise."""
    from ..backends.llm import parse_json

    try:
        obj = parse_json(text or "")
    except ValueError:
        return []
    if not isinstance(obj, dict):
        return []
    value = next((obj[k] for k in ("retrieve", "query", "queries", "search") if k in obj), None)
    values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [v.strip() for v in values if isinstance(v, str) and v.strip()]
