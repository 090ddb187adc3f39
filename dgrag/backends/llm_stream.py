"""A streamed LLM answer: the text pieces as they come, then the tool calls gathered from their
fragments. Retried (and sent to the fallback) only while nothing has been yielded: once the
caller has a piece, a failure ends the stream with `LLMError`. Never cached."""
from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any, Generator, Iterator

from ..errors import Cancelled, LLMError
from .aborts import cut_on_cancel
from .llm_outcomes import Failure, final_error
from .llm_retry import Retrying
from .llm_transport import Endpoint, request_kwargs

log = logging.getLogger("dgrag.backends.llm")


def stream_events(plan: list[tuple[Endpoint, str]], messages: list[dict], params: dict, retrying: Retrying,
                  cancel: threading.Event | None = None) -> Iterator[dict[str, Any]]:
    """{"type": "text", "text": delta} events, then {"type": "tool_call", ...} ones, from the
    first endpoint of `plan` that answers; LLMError when none does."""
    history: list[tuple[str, int, Failure]] = []
    for ep, m in plan:
        if ep.label == "fallback":
            log.warning("LLM primary stream failed; trying the fallback %s", ep.where(m))
        attempt, failure = yield from _on_endpoint(ep, m, messages, params, retrying, cancel)
        if failure is None:
            return
        history.append((ep.where(m), attempt, failure))
    retrying.counts.inc("failures")
    raise final_error(history, "stream", retrying.mask)


def _on_endpoint(ep: Endpoint, m: str, messages: list[dict], params: dict, retrying: Retrying,
                 cancel: threading.Event | None) -> Generator[dict[str, Any], None, tuple[int, Failure | None]]:
    """The events of one endpoint's stream; returns the attempts made and the last failure
    (None: the stream ended well)."""
    failure: Failure | None = None
    total = retrying.total
    attempt = 0
    while attempt < total:
        if attempt and failure is not None:
            retrying.pause(retrying.delay(attempt - 1, failure.retry_after), cancel)
        Cancelled.check(cancel)
        attempt += 1
        retrying.counts.inc("calls")
        yielded = False
        calls: dict[int, dict[str, str]] = {}
        ends: dict[str, str] = {}
        try:
            kw = request_kwargs(ep, m, messages, params)
            with contextlib.closing(stream_deltas(ep.client().chat.completions.create(stream=True, **kw),
                                                  calls, ends, cancel)) as deltas:
                for text in deltas:
                    yielded = True
                    yield {"type": "text", "text": text}
            Cancelled.check(cancel)
        except Cancelled:
            raise  # the stream is closed (stream_deltas); nothing to retry
        except Exception as exc:
            failure = retrying.classify(exc)
            retrying.counts.inc("retries")
            if yielded:
                retrying.counts.inc("failures")
                log.warning("LLM %s stream interrupted: %s", ep.where(m), retrying.mask(failure.reason))
                raise LLMError(retrying.mask(f"stream interrupted after the first token: {failure.reason} "
                                             f"[{ep.where(m)}]")) from None
            log.warning("LLM %s stream attempt %d/%d failed: %s", ep.where(m), attempt, total,
                        retrying.mask(failure.reason))
            if not failure.retryable:
                break
            continue
        if not yielded and not calls:
            failure = Failure("empty", "empty response", True)
            retrying.counts.inc("retries")
            log.warning("LLM %s stream attempt %d/%d failed: empty response", ep.where(m), attempt, total)
            continue
        if ep.label == "fallback":
            retrying.counts.inc("fallbacks")
        for i in sorted(calls):
            c = calls[i]
            yield {"type": "tool_call", "id": c["id"] or f"call_{i}", "name": c["name"],
                   "arguments": c["arguments"] or "{}"}
        if ends.get("finish") == "length":
            log.info("LLM stream cut at max_tokens (finish_reason=length)")
        return attempt, None
    assert failure is not None
    return attempt, failure


def stream_deltas(stream: Any, calls: dict[int, dict[str, str]], ends: dict[str, str],
                  cancel: threading.Event | None = None) -> Iterator[str]:
    """The text pieces of a streamed completion, as they come. Tool-call fragments are
    gathered into `calls` (by index) and the finish reason into `ends["finish"]`; the HTTP
    stream is closed however the reading ends, and as soon as a piece arrives after `cancel`
    is set (`Cancelled`), so the server stops writing; a cancel while the model is silent shuts
    the connection down at once (`aborts`)."""
    try:
        Cancelled.check(cancel)
        with cut_on_cancel(cancel, stream):  # a cancel while the model is silent cuts the read short
            try:
                for chunk in stream:
                    Cancelled.check(cancel)
                    choices = getattr(chunk, "choices", None) or []
                    if not choices:
                        continue
                    ch = choices[0]
                    if ch.finish_reason:
                        ends["finish"] = ch.finish_reason
                    delta = ch.delta
                    if delta is None:
                        continue
                    if delta.content:
                        yield delta.content
                    for tc in delta.tool_calls or []:
                        _add_tool_fragment(calls, tc)
            except Exception:
                Cancelled.check(cancel)  # the read failed because the cancel cut it: a cancel, not a fault
                raise
    finally:
        try:
            stream.close()
        except Exception:  # noqa: BLE001 - the connection is being dropped anyway
            pass


def _add_tool_fragment(calls: dict[int, dict[str, str]], tc: Any) -> None:
    acc = calls.setdefault(tc.index if tc.index is not None else len(calls), {"id": "", "name": "", "arguments": ""})
    if tc.id:
        acc["id"] = tc.id
    fn = tc.function
    if fn is not None:
        if fn.name and fn.name != acc["name"]:
            acc["name"] += fn.name
        if fn.arguments:
            acc["arguments"] += fn.arguments
