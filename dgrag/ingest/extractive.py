"""Offline summaries and captions: what a fresh install embeds before any LLM runs.

Extractive and deterministic: heading + first sentences for prose; signature and comments
for code; header row and first rows for tables; alt text, figure title, surrounding text and
file name for images. Marked `summary_source = 'extractive'`; an LLM summary replaces it.
"""
from __future__ import annotations

import posixpath
import re

from .context import of as context_of

_SENT = re.compile(r"(?<=[。！？；.!?;])\s*")
_SIGNATURE = re.compile(
    r"^\s*(?:export\s+|public\s+|private\s+|static\s+|async\s+)*"
    r"(?:@\w+|function\b|class\b|struct\b|interface\b|enum\b|def\b|import\b|build\(\)|"
    r"\w+\s*\([^)]*\)\s*[:{]|[\w.]+\s*=\s*(?:function|\())"
)
_COMMENT = re.compile(r"^\s*(?://|#(?!include)|/\*|\*|<!--)\s*(.*)")


def first_sentences(text: str, n: int = 2, max_chars: int = 300) -> str:
    text = re.sub(r"\s+", " ", text or "").strip()
    parts = [p for p in _SENT.split(text) if p.strip()]
    out = "".join(p if p[-1:] in "。！？；" else p + " " for p in parts[:n]).strip()
    return out[:max_chars]


def summarize_file(title: str, chunks: list[dict]) -> str:
    intro = next((c["prose"] for c in chunks if (c.get("prose") or "").strip()), "")
    intro = "\n".join(intro.split("\n")[1:]) or intro  # drop the heading line
    sections = [c["meta"].get("title", "") for c in chunks if c["meta"].get("level") == 2][:12]
    parts = [title, first_sentences(intro, 2)]
    if sections:
        parts.append("Sections: " + "; ".join(s for s in sections if s))
    return "\n".join(p for p in parts if p)


def summarize_chunk(node: dict) -> str:
    prose = node.get("prose") or ""
    body = "\n".join(prose.split("\n")[1:]) if node["meta"].get("level") else prose
    return "\n".join(p for p in (node["breadcrumb"], first_sentences(body, 2)) if p)


def summarize_code(node: dict) -> str:
    lines = node["text"].splitlines()
    sig = [ln.strip() for ln in lines if _SIGNATURE.match(ln)][:6]
    comments = [m.group(1).strip() for ln in lines if (m := _COMMENT.match(ln)) and m.group(1).strip()][:4]
    context = context_of(node).split("…")[0]
    lead = first_sentences(context.strip().split("\n")[-1] if context.strip() else "", 1)
    lang = node["meta"].get("code_language") or "code"
    parts = [f"{node['breadcrumb']} ({lang})", lead, " | ".join(comments), "\n".join(sig or lines[:4])]
    return "\n".join(p for p in parts if p)[:800]


def summarize_table(node: dict) -> str:
    header = [h for h in node["meta"].get("header", []) if h]
    rows = [ln.strip() for ln in node["text"].splitlines()[2:5]] if node["meta"].get("table_format") == "markdown" else []
    context = context_of(node).split("…")[0].strip().split("\n")
    lead = first_sentences(context[-1] if context else "", 1)
    parts = [f"{node['breadcrumb']} (table)", lead, "Columns: " + " | ".join(header) if header else "", "\n".join(rows)]
    return "\n".join(p for p in parts if p)[:800]


def caption_image(alt: str, src: str, breadcrumb: str, context: str) -> str:
    name = posixpath.splitext(posixpath.basename(src.replace("\\", "/")))[0]
    name = re.sub(r"[_\-]+", " ", name)
    before, _, after = context.partition("…")
    near = first_sentences((before.strip().split("\n") or [""])[-1], 1) or first_sentences(after, 1)
    alt = "" if alt.lower() in ("", "image", "img", "图片", "figure") else alt
    parts = [alt, f"Figure: {name}", breadcrumb, near]
    return "\n".join(p for p in parts if p)[:600]
