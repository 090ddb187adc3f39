"""Token estimates for the agent's budget and its report, without a tokenizer: the one rule of
dgrag.core.estimate_tokens (the query limit's too), applied to chat messages."""
from __future__ import annotations

import json
from typing import Any

from ..core import estimate_tokens

__all__ = ["estimate_tokens", "message_tokens"]


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
