"""Text helpers of the offline OpenIE: name validity, sentence spans and trimmed sentences
(entity descriptions), and the section topic read from the breadcrumb's headings."""
from __future__ import annotations

import re

from ..kernels.tokens import RELEASE_HEADING
from .openie_lexicon import (
    MAX_DESC_CHARS, MAX_IDENT_CHARS, MAX_NAME_CHARS, MAX_TOPIC_CHARS, ABBREV, CJK, EN_STOP, FUNCTION_WORDS,
    GENERIC_HEADINGS, LATIN, SENT_END, VERSIONISH, WS, ZH_STOP, nfkc, normalize_entity,
)


def valid_name(name: str, max_words: int = 6, max_chars: int = MAX_NAME_CHARS, stop: frozenset[str] = EN_STOP) -> bool:
    """A name that may be an entity: not too long, not a version, not a stop word (`stop`: English,
    the packs' unit words included)."""
    key = normalize_entity(name)
    limit = max(MAX_IDENT_CHARS, max_chars) if (" " not in key and not CJK.search(key)) else max_chars
    if len(key) < 2 or len(key) > limit:
        return False
    if "://" in key or key.startswith("www."):
        return False
    if not (LATIN.search(key) or CJK.search(key) or key in ("$$",)):
        return False
    if VERSIONISH.match(key):
        return False
    if key in stop or key in ZH_STOP:
        return False
    if len(CJK.findall(key)) == 1 and len(key) == 1:
        return False
    if key.count(" ") >= max_words:
        return False
    return True


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of sentences; ends on 。！？；!?; , '. ' and newlines."""
    spans, start = [], 0
    for m in SENT_END.finditer(text):
        if m.group(0) == "." :
            # don't end on abbreviations like "e.g." / "etc."
            tail = text[max(0, m.start() - 5):m.start()].lower()
            word = re.split(r"[\s(]", tail)[-1]
            if word in ABBREV:
                continue
        end = m.end()
        if text[start:m.start()].strip():
            spans.append((start, end))
        start = end
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


def trim_sentence(text: str, s: int, e: int, pos: int) -> str:
    sent = WS.sub(" ", text[s:e]).strip()
    if len(sent) <= MAX_DESC_CHARS:
        return sent
    rel = max(0, pos - s - 50)
    chunk = text[s + rel:e]
    chunk = WS.sub(" ", chunk).strip()
    if rel > 0:
        sp = chunk.find(" ")
        if 0 <= sp < 20 and not CJK.search(chunk[:sp]):
            chunk = chunk[sp + 1:]
        chunk = "…" + chunk
    if len(chunk) > MAX_DESC_CHARS:
        cut = chunk[:MAX_DESC_CHARS - 1]
        sp = cut.rfind(" ")
        if sp > MAX_DESC_CHARS // 2 and not CJK.search(cut[sp:]):
            cut = cut[:sp]
        chunk = cut.rstrip() + "…"
    return chunk


def is_cjk(ch: str) -> bool:
    return bool(ch) and bool(CJK.match(ch))


def clean_heading(h: str) -> str:
    h = nfkc(h or "").replace("\\@", "@")
    h = re.sub(r"<[^>]+>", "", h)
    h = re.sub(r"\s*\{:?\s*[#.][^{}\n]*\}\s*$", "", h)   # an attribute list: "Path Parameters { #path-parameters }"
    h = re.sub(r"^\s*(?:\d+(?:\.\d+)*(?:[.、)]\s*|\s+)|[一二三四五六七八九十]+[、.]\s*)", "", h)
    h = re.sub(r"(?<=[A-Za-z_)])\d+\+$", "", h.strip())     # checkAccessToken9+ (a <sup>9+</sup>)
    h = re.sub(r"\((?:deprecated|已废弃|废弃)\)$", "", h, flags=re.I)
    return WS.sub(" ", h).strip()


def _shorten_topic(h: str) -> str:
    """A heading as a topic name: at most MAX_TOPIC_CHARS, cut at a separator or a word boundary."""
    if len(normalize_entity(h)) <= MAX_TOPIC_CHARS:
        return h
    for sep in (":", "：", " - ", " – ", "(", "（", ",", "，"):
        if sep in h:
            head = h.split(sep)[0].strip()
            if 2 <= len(normalize_entity(head)) <= MAX_TOPIC_CHARS:
                return head
    cut = h[:MAX_TOPIC_CHARS]
    if not CJK.search(cut) and " " in cut:
        words = cut[:cut.rfind(" ")].split()
        while len(words) > 1 and words[-1].lower() in FUNCTION_WORDS | {"using", "based"}:
            words.pop()
        cut = " ".join(words)
    return cut.strip()


_ALIAS_HEADING = re.compile(r"^(.+?)(?:\s+\(|\s*（)([^()（）]{1,40})[)）]$")


def _split_alias(h: str, stop: frozenset[str]) -> tuple[str, str]:
    """"@ohos.buffer (Buffer)" -> ("@ohos.buffer", "Buffer"); "IDE工具（DevEco Studio）" likewise."""
    m = _ALIAS_HEADING.match(h)
    if not m:
        return h, ""
    x, y = m.group(1).strip(), m.group(2).strip()
    if not valid_name(x, max_words=12, max_chars=MAX_TOPIC_CHARS, stop=stop) \
            and not re.fullmatch(r"[@A-Za-z_$][\w$.@/-]*", x):
        return h, ""
    if len(x.split()) >= 3 and re.fullmatch(r"[A-Z][a-z]+", y):
        return x, ""                       # "... Symmetric Key (Callback)": a variant, not another name
    ok = (valid_name(y, stop=stop) and normalize_entity(y) not in GENERIC_HEADINGS
          and normalize_entity(y) != normalize_entity(x)
          and (len(CJK.findall(y)) >= 3 or re.search(r"[A-Z@._]", y)) and not re.match(r"^(?:example|示例|场景)", y, re.I))
    return x, (y if ok else "")


def _heading_ok(c: str, stop: frozenset[str]) -> bool:
    if normalize_entity(c) in GENERIC_HEADINGS:
        return False
    short = _shorten_topic(c)
    return valid_name(short, max_words=12, max_chars=MAX_TOPIC_CHARS, stop=stop) \
        or bool(re.fullmatch(r"[A-Za-z_$][\w$.]*(?:\(.*\))?", short) and len(short) >= 2)




def release_of(breadcrumb: str) -> str:
    """The release a changelog section belongs to ("Release Notes 0.115.0", "version 2.0.0"), or ""
    when no heading of the breadcrumb is a release's. Its "Fixes", "Features" are labels, not topics."""
    crumbs = [c.strip() for c in nfkc(breadcrumb or "").split(" / ") if c.strip()]
    for i in range(len(crumbs) - 1, -1, -1):
        m = RELEASE_HEADING.match(crumbs[i])
        if m:
            title = clean_heading(crumbs[0]) if i > 0 and not RELEASE_HEADING.match(crumbs[0]) else ""
            return f"{_shorten_topic(title or 'version')} {m.group('v')}"
    return ""


def section_topic(breadcrumb: str, text: str, stop: frozenset[str] = EN_STOP) -> tuple[str, str, str, str]:
    """(topic, the heading it came from, the heading's alias, the parent topic): the topic is the
    nearest non-generic breadcrumb heading, the parent the next one up; in a changelog, the release."""
    release = release_of(breadcrumb)
    if release:
        return release, breadcrumb.split(" / ")[-1].strip(), "", ""
    crumbs = [c for c in (clean_heading(c) for c in (breadcrumb or "").split(" / ")) if c]
    if not crumbs:
        first = clean_heading((text or "").strip().split("\n", 1)[0])
        crumbs = [first] if first else []
    if not crumbs:
        return "", "", "", ""
    idx = next((i for i in range(len(crumbs) - 1, -1, -1) if _heading_ok(crumbs[i], stop)), len(crumbs) - 1)
    heading = crumbs[idx]
    name, alias = _split_alias(heading, stop)
    topic = _shorten_topic(name)
    parent = ""
    for c in reversed(crumbs[:idx]):
        if _heading_ok(c, stop):
            p = _shorten_topic(_split_alias(c, stop)[0])
            if normalize_entity(p) != normalize_entity(topic):
                parent = p
                break
    return topic, heading, alias, parent
