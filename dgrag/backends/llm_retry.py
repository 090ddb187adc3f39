"""Retrying an LLM call on one endpoint: the back-off (exponential with full jitter, a
Retry-After honoured and capped), the cancel checks between attempts, the client's counters
every attempt moves, and the loop that turns replies and exceptions into a value or the last
`Failure` (`llm_outcomes` says what each one means)."""
from __future__ import annotations

import logging
import random
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import Cancelled
from .llm_outcomes import Failure, classify, read_response
from .llm_transport import Endpoint, request_kwargs

log = logging.getLogger("dgrag.backends.llm")

COUNTERS = ("calls", "cache_hits", "failures", "retries", "fallbacks")  # LLM.stats(), in this order


class Counters:
    """The client's counters (`LLM.stats()`), shared by its threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(COUNTERS, 0)

    def get(self, name: str) -> int:
        with self._lock:
            return self._counts[name]

    def inc(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        with self._lock:
            self._counts = dict.fromkeys(COUNTERS, 0)


@dataclass(frozen=True)
class Retrying:
    """A call's retry policy, read from the client as the call starts, with the counters it
    moves and the mask its messages go through."""
    max_retries: int
    backoff_s: float
    max_backoff_s: float
    timeout_s: float
    counts: Counters
    mask: Callable[[Any], str]

    @property
    def total(self) -> int:
        return self.max_retries + 1

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        return random.uniform(0.0, min(self.max_backoff_s, self.backoff_s * (2 ** attempt)))

    @staticmethod
    def pause(delay: float, cancel: threading.Event | None) -> None:
        """The back-off before a retry; a cancel ends it at once."""
        if delay > 0:
            if cancel is None:
                time.sleep(delay)
            else:
                cancel.wait(delay)
        Cancelled.check(cancel)

    def classify(self, exc: BaseException) -> Failure:
        return classify(exc, self.mask, self.timeout_s)

    def attempts(self, ep: Endpoint, model: str, messages: list[dict], params: dict, mode: str,
                 cancel: threading.Event | None = None) -> tuple[str | None, int, Failure | None]:
        """The value of a call on one endpoint, with the attempts made; or None, the attempts and
        the last failure once the retries are spent or a failure is not worth a retry."""
        failure: Failure | None = None
        total = self.total
        attempt = 0
        extra = 0  # one free retry when the server rejects response_format
        while attempt < total + extra:
            if attempt and failure is not None:
                self.pause(self.delay(max(0, attempt - 1 - extra), failure.retry_after), cancel)
            Cancelled.check(cancel)
            attempt += 1
            self.counts.inc("calls")
            sent_format = bool(params.get("response_format")) and ep.json_format_ok
            try:
                resp = ep.client().chat.completions.create(**request_kwargs(ep, model, messages, params))
                Cancelled.check(cancel)  # a reply that comes after the cancel is not used
            except Cancelled:
                raise
            except Exception as exc:  # classified below; never escapes as a raw openai error
                failure = self.classify(exc)
                if (failure.kind == "client" and sent_format and not extra
                        and getattr(exc, "status_code", None) in (400, 422)
                        and re.search(r"response.?format|json", failure.reason, re.IGNORECASE)):
                    ep.json_format_ok = False  # the server does not know response_format: ask without it
                    extra = 1
                    failure = Failure("client", failure.reason, True, 0.0)
            else:
                value, failure = read_response(resp, mode)
                if failure is None:
                    return value, attempt, None
            self.counts.inc("retries")
            last = attempt >= total + extra or not failure.retryable
            log.warning("LLM %s attempt %d/%d failed: %s%s", ep.where(model), attempt, total + extra,
                        self.mask(failure.reason), "" if last else "; retrying")
            if not failure.retryable:
                break
        return None, attempt, failure
