"""A token estimate for budgets and reports, without a tokenizer: one token per CJK character,
one per four other characters (the usual rule of thumb for BPE vocabularies on English)."""
from __future__ import annotations

import json
import math
import re
from typing import Any

_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")


def estimate_tokens(text: str) -> int:
    text = text or ""
    cjk = len(_CJK.findall(text))
    return cjk + math.ceil((len(text) - cjk) / 4)


def message_tokens(messages: list[dict[str, Any]]) -> int:
    """The estimate for a chat request: the text of every message (tool calls and tool results
    included), plus a flat 85 per image part (a low-detail image in OpenAI's accounting)."""
    total = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            total += estimate_tokens(content)
        elif isinstance(content, list):
            for part in content:
                total += 85 if part.get("type") == "image_url" else estimate_tokens(str(part.get("text", "")))
        if m.get("tool_calls"):
            total += estimate_tokens(json.dumps(m["tool_calls"], ensure_ascii=False))
        total += 4  # role and separators
    return total
