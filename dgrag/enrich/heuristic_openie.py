"""Offline OpenIE for technical docs: entities and triples without an LLM.

`extract(text, breadcrumb, language)` reads one chunk's prose (`filter` text: the heading
title on the first line, code blocks / tables / images removed) and returns
`(entities, triples)` in the same shape as the LLM OpenIE step:

* entities: `[(name, description)]`, the description being the (trimmed) sentence in which
  the entity first appears;
* triples: `[(head, relation, tail)]`, every head and tail being one of the entity names.

Candidates, most specific first: defined terms ("X is a Y", "X refers to", "X: ...",
"X是…", "X指…", "X用于…"), inline code spans (from `raw_markdown`), decorators and module
names (`@State`, `@ohos.router`), API names (`router.pushUrl`, `build()`), file names and
paths (`module.json5`), command lines (`ace build`), quoted terms (「」“”《》), CamelCase /
mixed-case identifiers and multi-word product names (ArkUI-X, DevEco Studio, UIAbility),
CJK noun phrases next to such tokens (ArkUI框架), acronyms (SDK, API), then plain capitalised
words and CJK noun phrases. The section topic (the nearest non-generic heading of the
breadcrumb) is always an entity.

Triples: topic --mentions/提及--> entity; definitional (X, "is a"/"是"/"指", Y) and
(X, "defined in"/"定义于", topic); (topic, label, value) for API reference fields such as
"System capability: SystemCapability.X" or "支持平台：Android、iOS"; aliases "X (Y)";
and for two entities adjacent in one sentence, the short phrase between them
(≤ 6 words / ≤ 10 CJK characters) as the relation.

Pure functions, standard library only, deterministic.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = ["normalize_entity", "extract", "MAX_ENTITIES", "MAX_TRIPLES", "MAX_NAME_CHARS"]

from .openie_lexicon import (  # noqa: F401 - the lexicon; normalize_entity is public here too
    MAX_DESC_CHARS, MAX_ENTITIES, MAX_IDENT_CHARS, MAX_NAME_CHARS, MAX_TOPIC_CHARS, MAX_TRIPLES, _ABBREV, _ACRONYM,
    _BOILERPLATE, _BRACKETS, _CAMEL, _CJK, _CJK_RANGE, _CJK_RUN, _CLI_SUBCOMMANDS, _COMMAND, _EDGE_PUNCT, _EN_STOP,
    _FIELD_LABELS, _FILE_EXT, _FUNCTION_WORDS, _GENERIC_HEADINGS, _GENERIC_TAILS, _KEEP_FULLWIDTH, _LATIN, _SCORE,
    _SENT_END, _SENT_VERBS, _SIG_LINE, _SKIP_LABELS, _TOKEN, _URL, _VERSIONISH, _WS, _ZH_BOUNDARY_BIGRAMS,
    _ZH_BOUNDARY_CHARS, _ZH_CUT_WORDS, _ZH_DEF_BAD_END, _ZH_DEF_BAD_START, _ZH_LEAD_STRIP, _ZH_STOP, _ZH_SUFFIXES,
    _ZH_TECH_MODIFIER_BAD, _ZH_VERBISH_HEADS, _balanced, _display, _nfkc, normalize_entity,
)



@dataclass
class _Mention:
    start: int
    end: int
    surface: str
    kind: str

    @property
    def score(self) -> int:
        return _SCORE.get(self.kind, 10)


@dataclass
class _Entity:
    name: str
    key: str
    pos: int
    score: int
    count: int
    desc: str


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------
def _valid(name: str, max_words: int = 6, max_chars: int = MAX_NAME_CHARS) -> bool:
    key = normalize_entity(name)
    limit = max(MAX_IDENT_CHARS, max_chars) if (" " not in key and not _CJK.search(key)) else max_chars
    if len(key) < 2 or len(key) > limit:
        return False
    if "://" in key or key.startswith("www."):
        return False
    if not (_LATIN.search(key) or _CJK.search(key) or key in ("$$",)):
        return False
    if _VERSIONISH.match(key):
        return False
    if key in _EN_STOP or key in _ZH_STOP:
        return False
    if len(_CJK.findall(key)) == 1 and len(key) == 1:
        return False
    if key.count(" ") >= max_words:
        return False
    return True


def _sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of sentences; ends on 。！？；!?; , '. ' and newlines."""
    spans, start = [], 0
    for m in _SENT_END.finditer(text):
        if m.group(0) == "." :
            # don't end on abbreviations like "e.g." / "etc."
            tail = text[max(0, m.start() - 5):m.start()].lower()
            word = re.split(r"[\s(]", tail)[-1]
            if word in _ABBREV:
                continue
        end = m.end()
        if text[start:m.start()].strip():
            spans.append((start, end))
        start = end
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


def _trim_sentence(text: str, s: int, e: int, pos: int) -> str:
    sent = _WS.sub(" ", text[s:e]).strip()
    if len(sent) <= MAX_DESC_CHARS:
        return sent
    rel = max(0, pos - s - 50)
    chunk = text[s + rel:e]
    chunk = _WS.sub(" ", chunk).strip()
    if rel > 0:
        sp = chunk.find(" ")
        if 0 <= sp < 20 and not _CJK.search(chunk[:sp]):
            chunk = chunk[sp + 1:]
        chunk = "…" + chunk
    if len(chunk) > MAX_DESC_CHARS:
        cut = chunk[:MAX_DESC_CHARS - 1]
        sp = cut.rfind(" ")
        if sp > MAX_DESC_CHARS // 2 and not _CJK.search(cut[sp:]):
            cut = cut[:sp]
        chunk = cut.rstrip() + "…"
    return chunk


def _is_cjk(ch: str) -> bool:
    return bool(ch) and bool(_CJK.match(ch))


def _clean_heading(h: str) -> str:
    h = _nfkc(h or "").replace("\\@", "@")
    h = re.sub(r"<[^>]+>", "", h)
    h = re.sub(r"^\s*(?:\d+(?:\.\d+)*(?:[.、)]\s*|\s+)|[一二三四五六七八九十]+[、.]\s*)", "", h)
    h = re.sub(r"(?<=[A-Za-z_)])\d+\+$", "", h.strip())     # checkAccessToken9+ (a <sup>9+</sup>)
    h = re.sub(r"\((?:deprecated|已废弃|废弃)\)$", "", h, flags=re.I)
    return _WS.sub(" ", h).strip()


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
    if not _CJK.search(cut) and " " in cut:
        words = cut[:cut.rfind(" ")].split()
        while len(words) > 1 and words[-1].lower() in _FUNCTION_WORDS | {"using", "based"}:
            words.pop()
        cut = " ".join(words)
    return cut.strip()


_ALIAS_HEADING = re.compile(r"^(.+?)(?:\s+\(|\s*（)([^()（）]{1,40})[)）]$")


def _split_alias(h: str) -> tuple[str, str]:
    """"@ohos.buffer (Buffer)" -> ("@ohos.buffer", "Buffer"); "IDE工具（DevEco Studio）" likewise."""
    m = _ALIAS_HEADING.match(h)
    if not m:
        return h, ""
    x, y = m.group(1).strip(), m.group(2).strip()
    if not _valid(x, max_words=12, max_chars=MAX_TOPIC_CHARS) and not re.fullmatch(r"[@A-Za-z_$][\w$.@/-]*", x):
        return h, ""
    if len(x.split()) >= 3 and re.fullmatch(r"[A-Z][a-z]+", y):
        return x, ""                       # "... Symmetric Key (Callback)": a variant, not another name
    ok = (_valid(y) and normalize_entity(y) not in _GENERIC_HEADINGS and normalize_entity(y) != normalize_entity(x)
          and (len(_CJK.findall(y)) >= 3 or re.search(r"[A-Z@._]", y)) and not re.match(r"^(?:example|示例|场景)", y, re.I))
    return x, (y if ok else "")


def _heading_ok(c: str) -> bool:
    if normalize_entity(c) in _GENERIC_HEADINGS:
        return False
    short = _shorten_topic(c)
    return _valid(short, max_words=12, max_chars=MAX_TOPIC_CHARS) or bool(re.fullmatch(r"[A-Za-z_$][\w$.]*(?:\(.*\))?", short) and len(short) >= 2)


def _topic(breadcrumb: str, text: str) -> tuple[str, str, str, str]:
    """(topic, the heading it came from, the heading's alias, the parent topic): the topic is the
    nearest non-generic breadcrumb heading, the parent the next one up."""
    crumbs = [c for c in (_clean_heading(c) for c in (breadcrumb or "").split(" / ")) if c]
    if not crumbs:
        first = _clean_heading((text or "").strip().split("\n", 1)[0])
        crumbs = [first] if first else []
    if not crumbs:
        return "", "", "", ""
    idx = next((i for i in range(len(crumbs) - 1, -1, -1) if _heading_ok(crumbs[i])), len(crumbs) - 1)
    heading = crumbs[idx]
    name, alias = _split_alias(heading)
    topic = _shorten_topic(name)
    parent = ""
    for c in reversed(crumbs[:idx]):
        if _heading_ok(c):
            p = _shorten_topic(_split_alias(c)[0])
            if normalize_entity(p) != normalize_entity(topic):
                parent = p
                break
    return topic, heading, alias, parent


# --------------------------------------------------------------------------------------
# candidate finders
# --------------------------------------------------------------------------------------
def _classify_token(tok: str, text: str, start: int, zh_context: bool, sentence_start: bool) -> str | None:
    core = tok[:-2] if tok.endswith("()") else tok
    low = core.lower()
    if low in _ABBREV or low.rstrip(".") in _ABBREV:
        return None
    if tok.startswith("@"):
        return "decorator" if len(core) > 2 else None
    if tok.startswith("$"):
        return "ident" if len(core) > 1 else None
    if re.search(rf"\.(?:{_FILE_EXT})$", core, re.I) and not core.startswith("."):
        return "file"
    if "/" in core:
        parts = [p for p in core.split("/") if p]
        if len(parts) >= 2 and not all(len(p) <= 3 and p.isupper() for p in parts) and low not in ("and/or", "or/and"):
            return "path"
        return None
    nxt = text[start + len(tok):start + len(tok) + 1]
    if tok.endswith("()") or (nxt == "(" and (_CAMEL.search(core) or "." in core or "_" in core)):
        return "api"
    if "." in core or "::" in core:
        parts = re.split(r"\.|::", core)
        if all(p.isdigit() for p in parts[1:]):
            return None
        if len(parts) == 2 and re.fullmatch(r"[a-z]{3,}", parts[0]) and re.fullmatch(r"[A-Z][a-z]+", parts[1]) \
                and (parts[1].lower() in _EN_STOP or parts[1].lower() in _SENT_VERBS):
            return None                      # "instance.Call createCipher()": a missing space
        if any(_LATIN.search(p) for p in parts[1:]):
            return "api"
        return None
    if "<" in core:
        return "camel"
    if "_" in core.strip("_"):
        return "ident"
    if _ACRONYM.match(core):
        return "acronym" if core.rstrip("s").upper() not in ("I", "OK", "TODO", "NOTE", "A") else None
    if _CAMEL.search(core):
        return "camel"
    if "-" in core:
        if any(c.isupper() for c in core[1:]) or re.search(r"\d", core):
            return "camel"
        return "latin_in_zh" if zh_context and len(core) > 2 else None
    if zh_context:
        if len(core) >= 2 and low not in _EN_STOP:
            return "latin_in_zh"
        return None
    if core[0].isupper() and len(core) >= 3 and not sentence_start and low not in _EN_STOP:
        return "proper"
    return None


def _latin_tokens(text: str, body_start: int, sent_starts: set[int], zh: bool) -> list[_Mention]:
    out: list[_Mention] = []
    cleaned = _URL.sub(lambda m: " " * len(m.group(0)), text)
    starts = sorted(sent_starts)
    raw = []
    for m in _TOKEN.finditer(cleaned):
        tok = m.group(0)
        # strip a dangling generic part "<...>" if unbalanced
        if tok.count("<") != tok.count(">"):
            tok = tok[:tok.index("<")]
        tok = tok.rstrip(".-/")
        if not tok:
            continue
        s = m.start()
        k = s - 1
        while k >= 0 and text[k].isspace():
            k -= 1
        prev = text[k] if k >= 0 else ""
        si = bisect.bisect_right(starts, s) - 1
        at_sentence_start = (si >= 0 and not text[starts[si]:s].strip()) \
            or prev in ("", ".", ":", "：", "!", "?", "\"", "“", "(", "（", "-", "–", "—", "*", "•")
        zh_ctx = zh or _is_cjk(text[s - 1:s]) or _is_cjk(text[s + len(tok):s + len(tok) + 1])
        kind = _classify_token(tok, text, s, zh_ctx, at_sentence_start)
        raw.append((s, s + len(tok), tok, kind, at_sentence_start))
    latin_heading = not _CJK.search(text[:body_start])

    def heading_word(pos: int, kind: str) -> bool:
        """An ordinary word of the heading line: the topic already covers it."""
        return pos < body_start and (kind == "proper" or (kind == "latin_in_zh" and latin_heading))

    # merge runs of capitalised / technical tokens separated by one space: DevEco Studio, ACE Tools
    i = 0
    while i < len(raw):
        s, e, tok, kind, _ = raw[i]
        j = i
        group = [raw[i]]
        capish_start = tok[:1].isupper() or kind in ("camel", "acronym")
        while capish_start and j + 1 < len(raw):
            ns, _, ntok, nkind, _ = raw[j + 1]
            gap = text[group[-1][1]:ns]
            if gap != " " or len(group) >= (6 if group[0][2].lower() in _EN_STOP else 5):
                break
            if not (ntok[:1].isupper() or nkind in ("camel", "acronym")) or ntok.lower() in _FUNCTION_WORDS:
                break
            if "\n" in gap:
                break
            group.append(raw[j + 1])
            j += 1
        # drop leading stop-words ("The DevEco Studio", "In ArkUI")
        while len(group) > 1 and (group[0][2].lower() in _EN_STOP or (
                group[0][4] and group[0][3] is None and (
                    group[0][2].lower() in _SENT_VERBS or group[0][2].lower() in _API_VERBS_EN
                    or group[0][2].lower().rstrip("s") in _SENT_VERBS))):
            group = group[1:]
        if len(group) == 1 and j > i:
            g = group[0]
            if g[3] and not heading_word(g[0], g[3]):
                out.append(_Mention(g[0], g[1], g[2], g[3]))
            i = j + 1
            continue
        capish = [g for g in group if g[2][:1].isupper() or g[3] in ("camel", "acronym")]
        strong = [g for g in group if g[3] in ("camel", "acronym", "latin_in_zh", "proper")]
        if len(group) >= 2 and len(capish) == len(group) and strong and all(g[3] not in ("api", "file", "path") for g in group):
            gs, ge = group[0][0], group[-1][1]
            surface = text[gs:ge]
            technical = any(g[3] in ("camel", "acronym", "ident") for g in group)
            if gs < body_start and not technical:
                i = j + 1          # Title Case words of the heading line: the topic covers them
                continue
            if len(surface) <= MAX_NAME_CHARS:
                out.append(_Mention(gs, ge, surface, "phrase"))
                # "ArkUI-X SDK", "ArkTS API": the product name stays an entity too
                g0, g1 = group[0], group[-1]
                if len(group) == 2 and g0[3] == "camel" and (
                        g1[3] == "acronym" or g1[2].lower() in _GENERIC_TAILS):
                    out.append(_Mention(g0[0], g0[1], g0[2], g0[3]))
                i = j + 1
                continue
            # too long for one name: keep its technical words, not a truncated tail of it
            out.extend(_Mention(g[0], g[1], g[2], g[3]) for g in group if g[3] in ("camel", "acronym", "ident"))
            i = j + 1
            continue
        if kind and not heading_word(s, kind):
            out.append(_Mention(s, e, tok, kind))
        i += 1
    return out


def _commands(text: str) -> list[_Mention]:
    out = []
    for m in _COMMAND.finditer(text):
        prog = m.group(1)
        args = m.group(2).split()
        allowed = _CLI_SUBCOMMANDS[prog]
        if allowed is not None and args[0] not in allowed:
            continue
        if allowed is None and args[0].lower() in _EN_STOP and not args[0].startswith("-"):
            continue
        # keep the subcommand and following options / lowercase words that look like arguments
        keep = [args[0]]
        for a in args[1:]:
            if a.startswith("-") or (a in ("apk", "ios", "aab", "hap", "app", "android", "bundle", "build", "run") ):
                keep.append(a)
            else:
                break
        end = m.start() + len(prog)
        for a in keep:
            end = text.index(a, end) + len(a)
        out.append(_Mention(m.start(), end, text[m.start():end], "command"))
    return out


_QUOTED = re.compile(r"「([^」\n]{2,40})」|“([^”\n]{2,40})”|《([^》\n]{2,40})》|『([^』\n]{2,40})』|\"([^\"\n]{2,40})\"")


def _quoted(text: str) -> list[_Mention]:
    out = []
    for m in _QUOTED.finditer(text):
        gi = next(i for i in range(1, 6) if m.group(i) is not None)
        inner = m.group(gi)
        if "%{" in inner or sum(not (c.isalnum() or c.isspace() or c in "._-@$") for c in inner) > 0.3 * len(inner):
            continue
        if len(inner.split()) > 5 or re.search(r"[。，,!?！？；;]", inner) or inner.strip().endswith(".") \
                or len(_CJK.findall(inner)) > 15:
            continue
        out.append(_Mention(m.start(gi), m.end(gi), inner, "quoted"))
    return out


def _cjk_phrases(text: str, latin: list[_Mention]) -> list[_Mention]:
    """ArkUI框架 / UIAbility组件 (token + CJK head noun) and plain CJK noun phrases (状态管理)."""
    out = []
    for t in latin:
        if t.kind not in ("camel", "acronym", "latin_in_zh", "phrase", "decorator", "api", "ident", "proper"):
            continue
        after = _CJK_RUN.match(text, t.end)
        if not after:
            continue
        run = after.group(0)[:6]
        best = 0
        for suf in _ZH_SUFFIXES:
            # the head noun may follow one or two modifier characters: UI开发框架
            for k in range(0, min(len(run) - len(suf), 3) + 1):
                if run[k:k + len(suf)] == suf and not run[:k].startswith(_ZH_TECH_MODIFIER_BAD) \
                        and all(c not in _ZH_BOUNDARY_CHARS for c in run[:k + len(suf)]):
                    best = max(best, k + len(suf))
        if best:
            surface = text[t.start:t.end + best]
            out.append(_Mention(t.start, t.end + best, surface, "cjk_tech"))
    for m in _CJK_RUN.finditer(text):
        run, base = m.group(0), m.start()
        if len(run) < 3:
            continue
        taken_until = -1
        # scan head nouns from right to left; each yields at most one phrase
        positions = []
        for i in range(len(run)):
            for suf in _ZH_SUFFIXES:
                if run.startswith(suf, i):
                    if suf not in _ZH_VERBISH_HEADS:
                        positions.append((i + len(suf), suf))
                    break
        for end, suf in positions:
            if end <= taken_until:
                continue
            j = end - len(suf)
            k = j
            while k > 0 and j - k < 10 and run[k - 1] not in _ZH_BOUNDARY_CHARS:
                k -= 1
            if k > 0 and run[k - 1:k + 1] in _ZH_BOUNDARY_BIGRAMS:
                k += 1
            phrase = run[k:end]
            cut = max((phrase.rfind(w, 0, len(phrase) - len(suf)) + len(w) for w in _ZH_CUT_WORDS
                       if 0 <= phrase.rfind(w, 0, len(phrase) - len(suf))), default=0)
            phrase = phrase[cut:]
            changed = True
            while changed:
                changed = False
                for lead in _ZH_LEAD_STRIP:
                    if phrase.startswith(lead) and len(phrase) - len(lead) >= len(suf):
                        phrase = phrase[len(lead):]
                        changed = True
                        break
            if len(phrase) <= len(suf) or len(phrase) < 3 or len(phrase) > 10:
                continue
            if normalize_entity(phrase) in _ZH_STOP:
                continue
            ps = base + end - len(phrase)
            out.append(_Mention(ps, base + end, phrase, "cjk_np"))
            taken_until = end
    return out


def _prose_lines(raw_markdown: str) -> list[str]:
    """Lines of raw Markdown outside fenced / indented code and tables."""
    lines, in_fence, fence = [], False, ""
    for ln in raw_markdown.splitlines():
        st = ln.strip()
        if re.match(r"^(`{3,}|~{3,})", st):
            mark = st[:3]
            if not in_fence:
                in_fence, fence = True, mark
            elif st.startswith(fence):
                in_fence = False
            continue
        if in_fence or st.startswith("|") or ln.startswith("    ") and not st.startswith(("-", "*", ">", "1")):
            continue
        lines.append(ln)
    return lines


def _code_spans(raw_markdown: str, text: str) -> list[tuple[str, int]]:
    """Inline code spans of the prose part of raw Markdown -> (span, position in text or -1)."""
    body = "\n".join(_prose_lines(raw_markdown))
    found = []
    for m in re.finditer(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", body):
        span = _nfkc(m.group(2).strip()).replace("\\@", "@")
        if not span or "${" in span or "\n" in span:
            continue
        if len(span.split()) > 5 or not _valid(span) or "%{" in span:
            continue
        if sum(not (c.isalnum() or c in " ._-@$") for c in span) > 0.3 * len(span):
            continue
        found.append((span, text.find(span)))
    return found


def _bold_spans(raw_markdown: str) -> list[str]:
    out = []
    for ln in _prose_lines(raw_markdown):
        parts = ln.split("**")
        for k in range(1, len(parts) - 1, 2):          # odd segments are bold
            b = _nfkc(parts[k]).replace("\\@", "@").strip().strip("“”\"'「」")
            if re.match(r"^(?:\d+(?:\.\d+)*[.、)]|[一二三四五六七八九十]+、|(?:step|步骤)\s*\d)", b, re.I):
                continue
            if not 2 <= len(b) <= 40:
                continue
            if re.search(r"[:：。.,，!?]$", b) or normalize_entity(b) in _SKIP_LABELS or normalize_entity(b) in _FIELD_LABELS:
                continue
            if len(b.split()) > 4 or re.search(r"[,，。;；、]", b) or len(_CJK.findall(b)) > 15:
                continue
            out.append(b)
    return out


# --------------------------------------------------------------------------------------
# definitions and labelled fields
# --------------------------------------------------------------------------------------
_EN_DEF = re.compile(
    r"^(?:the\s+|an?\s+)?(?P<x>[^\s,;:()][^,;:()]{0,50}?(?:\s*\([^()]{1,30}\))?)\s+"
    r"(?P<rel>is|are|refers to|refer to|means|stands for|is defined as|is known as)\s+(?:(?:essentially|basically|actually|mainly|also)\s+)?"
    r"(?P<art>(?:a|an|the|one of the)\s+)?(?P<y>[^,;:.()]{2,80})",
    re.I,
)
_EN_NP_STOP = re.compile(
    r"\s+(?:that|which|who|whose|where|when|to|for|in|on|of|with|from|by|as|and|or|but|used|"
    r"provided|designed|allowing|so|because|if|at|into|than|between|through|across|via|without|"
    r"while|including|such|based|returned|supported|defined)\b.*$", re.I)
_EN_BAD_SUBJ = {"this", "it", "that", "there", "these", "those", "they", "what", "which", "here", "the following",
                "following", "below", "above", "all", "each", "one", "other", "some", "such", "default", "result",
                "the result", "the value", "value", "return value", "the return value", "note"}
_ZH_DEF = re.compile(
    r"(?P<x>[^,，。;；:：!！?？、\n]{1,30}?)"
    r"(?P<rel>是指|指的是|是(?!否)|指(?![定出向令南针标明])|即(?![可使将便时刻])|用于|称为|表示)"
    r"(?P<y>[^,，。;；:：!！?？\n]{2,60})"
)
_EN_API_VERB = re.compile(
    r"^(?P<v>Defines|Enumerates|Implements|Describes|Provides|Represents|Indicates|Specifies|Obtains|Creates|"
    r"Returns|Sets|Gets|Checks|Adds|Removes|Deletes|Subscribes to|Unsubscribes from|Starts|Stops|Enables|"
    r"Disables|Registers|Unregisters|Converts|Encodes|Decodes|Reads|Writes|Opens|Closes|Sends|Receives|"
    r"Initializes|Updates|Queries|Inserts|Clears|Binds|Loads|Saves|Generates|Verifies|Signs|Encrypts|Decrypts|"
    r"Compares|Copies|Moves|Renames|Listens to|Triggers|Applies|Configures|Displays|Shows|Hides|Manages|"
    r"Stores|Controls|Handles|Calculates|Parses|Resets|Pauses|Resumes|Cancels|Requests|Releases)\s+"
    r"(?:(?:a|an|the|all|this|that|one|some|each|information about|details of)\s+)*(?P<o>[^,;:.()]{2,80})")
_ZH_API_VERB = re.compile(
    r"^(?P<v>定义|枚举|表示|提供|获取|设置|创建|删除|取消订阅|订阅|注册|注销|启动|停止|返回|检查|判断|添加|移除|转换|查询|"
    r"更新|读取|写入|打开|关闭|绑定|解绑|发送|接收|初始化|监听|触发|生成|校验|加密|解密|比较|复制|移动|加载|保存|清除|"
    r"显示|隐藏|管理|存储|控制|处理|计算|解析|重置|暂停|恢复|取消|请求|释放|描述)"
    r"(?P<o>[^,，。;；:：!?！？]{2,40})")
_API_VERBS_EN = {w.lower() for w in re.findall(r"[A-Z][a-z]+", _EN_API_VERB.pattern)}
_TECHY = re.compile(r"[A-Z].*[A-Z]|[a-z][A-Z]|[._@$]|\d|[\u4e00-\u9fff]")
_ZH_Y_LEAD = re.compile(r"^(?:一(?:个|套|种|款|组|项|类|系列|些)|个|种|套|款|指|对|一)")


def _split_paren(x: str, pos: int, text: str) -> tuple[str, str, int]:
    """"ECDSA-like names": "Elliptic Curve ... (ECDSA)" -> (name, alias, alias position in text)."""
    m = re.match(r"^(.+?)\s*[(（]([^()（）]{1,30})[)）]$", x)
    if not m or not _valid(m.group(2)):
        return x, "", -1
    apos = text.find(m.group(2), pos)
    return m.group(1).strip(), m.group(2).strip(), apos


def _clean_en_np(y: str) -> str:
    if re.match(r"^(?:whether|if|how|what|which|that|when|where|why|to|not)\b", y.strip(), re.I):
        return ""
    y = _EN_NP_STOP.sub("", y.strip())
    words = y.split()[:6]
    while words and (words[-1].lower() in _EN_STOP or (len(words) > 1 and re.fullmatch(
            r"[a-z]+(?:ed|ly)|corresponding|related|specified|given|provided", words[-1]))):
        words.pop()
    while words and words[0].lower() in {"a", "an", "the", "some", "set", "kind", "type", "collection"} and len(words) > 1:
        words = words[1:]
        if words and words[0].lower() == "of":
            words = words[1:]
    return " ".join(words)


def _clean_zh_np(y: str) -> str:
    y = y.strip()
    y = _ZH_Y_LEAD.sub("", y)
    if "的" in y and len(y) > 8:
        tail = y.rsplit("的", 1)[1]
        if len(tail) >= 2:
            y = tail
    y = re.sub(r"[，。,.!?！？…]+$", "", y).strip()
    if len(y) > 16:
        return ""
    return y


# --------------------------------------------------------------------------------------
# main entry
# --------------------------------------------------------------------------------------
def extract(text: str, breadcrumb: str, language: str, raw_markdown: str | None = None
            ) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """Entities `[(name, description)]` and triples `[(head, relation, tail)]` of one chunk.

    `text` is the chunk's prose (`filter`: first line the heading title), `breadcrumb` the
    "H1 / H2 / H3" path, `language` "zh" or "en" (relation labels: 提及/mentions, ...), and
    `raw_markdown` optionally the chunk's Markdown, whose inline code spans become entities.
    At most MAX_ENTITIES entities and MAX_TRIPLES triples, most specific first; the output
    order is deterministic (topic first, then by first appearance)."""
    zh = (language or "").lower().startswith("zh")
    R = _REL_ZH if zh else _REL_EN
    text = _nfkc(text or "").replace("\\@", "@").replace("\u200b", "")
    topic, topic_heading, topic_alias, parent = _topic(breadcrumb, text)

    # the first line is the heading title when it matches the breadcrumb's last heading
    lines = text.split("\n", 1)
    body_start = 0
    crumbs = [c.strip() for c in (breadcrumb or "").split(" / ") if c.strip()]
    if crumbs and _clean_heading(lines[0]) == _clean_heading(crumbs[-1]):
        head = _clean_heading(lines[0])          # "getTotalBytes18+" -> "getTotalBytes"
        text = head + ("\n" + lines[1] if len(lines) > 1 else "")
        body_start = len(head) + 1 if len(lines) > 1 else len(text)
    sents = _sentences(text)
    sent_starts = {s + (len(text[s:e]) - len(text[s:e].lstrip())) for s, e in sents}

    sent_bounds = [s for s, _ in sents]

    def sent_of(pos: int) -> int:
        return min(max(0, bisect.bisect_right(sent_bounds, pos) - 1), max(0, len(sents) - 1))

    triples: list[tuple[int, int, str, str, str]] = []   # (priority, position, head, rel, tail)
    mentions: list[_Mention] = []

    # ---- API signature lines ("name(args): ReturnType", "type X = Y"): read, then masked
    masked = text
    sig_spans: list[tuple[int, int]] = []
    for m in _SIG_LINE.finditer(text):
        g = "name" if m.group("name") else "tname"
        if m.start(g) < body_start or _CJK.search(m.group(0)):
            continue
        name = m.group(g)
        sig_spans.append((m.start(), m.end()))
        masked = masked[:m.start()] + " " * (m.end() - m.start()) + masked[m.end():]
        mentions.append(_Mention(m.start(g), m.end(g), name, "signature"))
        args = m.group("args") or ""
        for t in re.finditer(r"(?<![\w.'\"])[A-Z][A-Za-z0-9_]+(?:\.[A-Z][A-Za-z0-9_]*)*(?:<[^<>()]*>)?", args):
            tpos = m.start("args") + t.start()
            mentions.append(_Mention(tpos, tpos + len(t.group(0)), t.group(0), "camel"))
            triples.append((1, tpos, name, R["param"], t.group(0)))
        rg = "ret" if g == "name" else "tval"
        ret = (m.group(rg) or "").strip().rstrip(";").strip()
        if ret and ret.lower() not in ("void", "undefined", "any", "null", "this") and _valid(ret):
            rpos = text.find(ret, m.start(rg))
            if rpos < 0:
                continue
            mentions.append(_Mention(rpos, rpos + len(ret), ret, "camel"))
            triples.append((1, rpos, name, R["returns"], ret))

    for bp in _BOILERPLATE.finditer(masked):
        masked = masked[:bp.start()] + " " * (bp.end() - bp.start()) + masked[bp.end():]
        sig_spans.append((bp.start(), bp.end()))
    latin = _latin_tokens(masked, body_start, sent_starts, zh)
    mentions += latin
    mentions += _commands(masked)
    mentions += [_Mention(m.start(), m.end(), "$$", "ident")
                 for m in re.finditer(r"(?<![$A-Za-z0-9_])\$\$(?![$A-Za-z0-9_])", masked)]
    mentions += _quoted(masked)
    mentions += _cjk_phrases(masked, latin)

    extra: list[tuple[str, str, int]] = []  # (surface, kind, position) not tied to a span in text
    if raw_markdown:
        for span, pos in _code_spans(raw_markdown, text):
            if pos >= 0:
                for m in re.finditer(re.escape(span), text):
                    mentions.append(_Mention(m.start(), m.end(), span, "code"))
            else:
                extra.append((span, "code", len(text)))
        for b in _bold_spans(raw_markdown):
            pos = text.find(b)
            if pos >= 0:
                mentions.append(_Mention(pos, pos + len(b), b, "bold"))

    # ---- definitions and labelled fields, sentence by sentence
    first_sentence = True
    for s, e in sents:
        if s < body_start or any(a < e and s < b for a, b in sig_spans):
            continue
        raw_sent = text[s:e]
        lead = len(raw_sent) - len(raw_sent.lstrip())
        sent = raw_sent.strip().rstrip("。.!！?？;；")
        ss = s + lead
        if not sent:
            continue
        # API reference style "Defines a binary data array." / "获取待下载文件的总长度。": the topic does it
        if first_sentence and topic:
            first_sentence = False
            vm_en = _EN_API_VERB.match(sent)
            vm = vm_en or _ZH_API_VERB.match(sent)
            if vm:
                verb = vm.group("v")
                obj = vm.group("o")
                if vm_en:
                    obj = _clean_en_np(obj)
                    if len(obj.split()) < 2 and not _TECHY.search(obj):
                        obj = ""               # "Enumerates the reasons": too generic alone
                else:
                    obj = _clean_zh_np(re.split(r"后|时|是否|并|且|以|来|要|需|[(（]", obj)[0])
                    if len(obj) > 10:
                        obj = ""
                if obj and _valid(obj) and normalize_entity(obj) != normalize_entity(topic):
                    opos = text.find(obj, ss + vm.start("o"))
                    if opos >= 0:
                        mentions.append(_Mention(opos, opos + len(obj), obj, "isa_tail"))
                        triples.append((1, opos, topic, verb.lower(), obj))
        # "Label: value" / "X：definition"
        lab = re.match(r"^([^:：\n(（]{1,24}?)\s*[:：]\s*(.+)$", sent)
        if lab and not _URL.match(sent):
            label, value = lab.group(1).strip(), lab.group(2)
            num = re.match(r"^(?:\d+(?:\.\d+)*(?:[.、)]\s*|\s+)|[一二三四五六七八九十]+、\s*)", label)
            if num and num.end() < len(label):
                label = label[num.end():]
            lkey = normalize_entity(label)
            lkey_nodigit = re.sub(r"\s*\d+$", "", lkey)
            vstart = ss + lab.start(2)
            if lkey in _FIELD_LABELS:
                values = [m for m in mentions if vstart <= m.start < ss + len(sent)]
                cursor = vstart
                for part in re.split(r"[、,，;；]|\s+and\s+|\s+or\s+|和|及", value):
                    part = part.strip().strip("。.")
                    p = text.find(part, cursor) if part else -1
                    if p < 0:
                        continue
                    cursor = p + len(part)
                    words = part.split()
                    if (_valid(part) and len(part) <= 30 and len(words) <= 4
                            and not any(w.lower() in _FUNCTION_WORDS for w in words)):
                        mentions.append(_Mention(p, p + len(part), part, "field_value"))
                        values.append(mentions[-1])
                for v in values:
                    triples.append((1, v.start, topic, label, v.surface))
                continue
            short_label = (len(_CJK.findall(label)) <= 10 and len(label) <= 16) if _CJK.search(label) \
                else len(label.split()) <= 4
            if lkey not in _SKIP_LABELS and lkey_nodigit not in _SKIP_LABELS and _valid(label) and short_label \
                    and not re.search(r"[。.,，\[\]]", label) \
                    and not re.match(r"^(?:step|步骤|note|注意|例如|比如|e\.g|for example|如)", lkey) \
                    and not re.search(r"(?:包括|如下|以下|包含|为|有|是|the following|as follows|include|includes)$", lkey):
                lpos = text.find(label, ss)
                mentions.append(_Mention(lpos, lpos + len(label), label, "defined"))
                triples.append((0, lpos, label, R["defined_in"], topic))
                continue
        # English "X is a Y" / "X refers to Y"
        m = _EN_DEF.match(sent)
        if m:
            x, alias, alias_pos = _split_paren(m.group("x").strip(), ss + m.start("x"), text)
            xk = normalize_entity(x)
            y = _clean_en_np(m.group("y"))
            rel = m.group("rel").lower()
            xw = x.split()
            name_like = all(w[:1].isupper() or not w[:1].isalpha() for w in xw)
            good_x = (xk not in _EN_BAD_SUBJ and len(xw) <= (6 if name_like else 4) and _valid(x)
                      and not any(w.lower() in _EN_STOP for w in xw[1:])
                      and not (xw[0].lower() in _EN_STOP and len(xw) == 1)
                      and not re.match(r"^[A-Z][a-z]+s$", xw[0]) or len(xw) == 1 and _CAMEL.search(x))
            yw = m.group("y").split()
            good_y = bool(y) and _valid(y) and normalize_entity(y) != xk and (
                m.group("art") or rel not in ("is", "are") or (yw and (_CAMEL.search(yw[0]) or _ACRONYM.match(yw[0]))))
            if good_x and good_y:
                xpos = ss + m.start("x")
                mentions.append(_Mention(xpos, xpos + len(x), x, "defined"))
                ypos = text.find(y, ss + m.start("y"))
                if ypos >= 0:
                    mentions.append(_Mention(ypos, ypos + len(y), y, "isa_tail"))
                else:
                    extra.append((y, "isa_tail", ss + m.start("y")))
                rel = R["is_a"] if rel in ("is", "are", "is defined as", "is known as") else rel
                triples.append((0, xpos, x, rel, y))
                triples.append((0, xpos, x, R["defined_in"], topic))
                if alias:
                    mentions.append(_Mention(alias_pos, alias_pos + len(alias), alias, "quoted"))
                    triples.append((0, xpos, x, R["alias"], alias))
                continue
        # Chinese "X是Y" / "X指Y" / "X用于Y" / "X称为Y"
        for m in _ZH_DEF.finditer(sent):
            x, alias, alias_pos = _split_paren(m.group("x").strip(), ss + m.start("x"), text)
            # X starts at the clause start
            if m.start("x") != 0 and sent[m.start("x") - 1] not in ",，;；:：、(（ \n":
                continue
            if not x or x.startswith(_ZH_DEF_BAD_START) or x[-1] in _ZH_DEF_BAD_END or "的" in x:
                continue
            if x.endswith(("可能", "应该", "必须", "一定", "就是", "并不", "而不", "只是", "都是", "还是", "也是", "不是")):
                continue
            if not _valid(x) or (len(_CJK.findall(x)) > 10) or len(x.split()) > 4:
                continue
            rel = m.group("rel")
            rel = "是" if rel in ("是", "即") else "指" if rel in ("是指", "指的是", "指") else rel
            y = _clean_zh_np(m.group("y"))
            if rel == "是" and (not y or not _valid(y) or y.startswith(("否", "因为", "为了", "由", "在", "从", "不"))):
                continue
            xpos = ss + m.start("x")
            mentions.append(_Mention(xpos, xpos + len(x), x, "defined"))
            triples.append((0, xpos, x, R["defined_in"], topic))
            if alias:
                mentions.append(_Mention(alias_pos, alias_pos + len(alias), alias, "quoted"))
                triples.append((0, xpos, x, R["alias"], alias))
            if y and _valid(y) and normalize_entity(y) != normalize_entity(x):
                ypos = text.find(y, ss + m.start("y"))
                if ypos >= 0:
                    mentions.append(_Mention(ypos, ypos + len(y), y, "isa_tail"))
                else:
                    extra.append((y, "isa_tail", ss + m.start("y")))
                triples.append((0, xpos, x, R["is_a"] if rel == "是" else rel, y))
            break
        # "通过X…" / "via X": X as a candidate
        for m in re.finditer(r"通过(?P<x>[A-Za-z@$][A-Za-z0-9_.@$-]*(?: [A-Z][A-Za-z0-9_-]*)?|[\u4e00-\u9fff]{2,8}?)(?=进行|来|实现|获取|调用|完成|可以|即可|设置|创建|,|，|。|的|$)", sent):
            x = m.group("x")
            if _CJK.match(x) and not (len(x) <= 4 or x.endswith(tuple(_ZH_SUFFIXES))):
                continue
            if _valid(x) and normalize_entity(x) not in _ZH_STOP:
                p = ss + m.start("x")
                mentions.append(_Mention(p, p + len(x), x, "via"))

    # ---- drop invalid, resolve overlaps (longer first, then higher score)
    mentions = [m for m in mentions if m.surface and _valid(m.surface)]
    mentions.sort(key=lambda m: (-(m.end - m.start), -m.score, m.start))
    occupied: list[tuple[int, int]] = []
    chosen: list[_Mention] = []
    entities_extra: list[_Mention] = []   # contained technical tokens kept as entities only
    for m in mentions:
        overlap = next(((a, b) for a, b in occupied if m.start < b and a < m.end), None)
        if overlap is None:
            chosen.append(m)
            occupied.append((m.start, m.end))
        elif m.kind in ("camel", "decorator", "api", "code", "defined", "signature", "ident", "file") \
                and overlap[0] <= m.start and m.end <= overlap[1]:
            entities_extra.append(m)
    chosen.sort(key=lambda m: (m.start, m.end))

    # ---- entities
    ents: dict[str, _Entity] = {}

    def add_entity(surface: str, kind: str, pos: int, score: int | None = None) -> str | None:
        name = _display(surface)
        key = normalize_entity(name)
        if not _valid(name) or (key != topic_key and (key in _GENERIC_HEADINGS or key in _SKIP_LABELS
                                                          or key in _FIELD_LABELS)):
            return None
        sc = _SCORE.get(kind, 10) if score is None else score
        if key in ents:
            ent = ents[key]
            ent.count += 1
            ent.score = max(ent.score, sc)
            if pos < ent.pos:
                ent.pos = pos
                si = sent_of(pos)
                ent.desc = _trim_sentence(text, *sents[si], pos) if sents else name
            return ent.name
        if sents and pos < len(text):
            desc = _trim_sentence(text, *sents[sent_of(pos)], pos)
        else:
            desc = ""
        ents[key] = _Entity(name, key, pos, sc, 1, desc or name)
        return name

    topic_key = normalize_entity(topic)
    if topic:
        body = text[body_start:].strip()
        first = next(((s, e) for s, e in sents if s >= body_start), None)
        tdesc = _trim_sentence(text, *first, first[0]) if first and body else (breadcrumb or topic)
        if topic_heading and normalize_entity(topic_heading) != topic_key and not body:
            tdesc = topic_heading
        ents[topic_key] = _Entity(_display(topic), topic_key, -1, 1000, 1, tdesc[:MAX_DESC_CHARS])
    structural: set[str] = set()
    for extra_name, rel_key in ((topic_alias, "alias"), (parent, "part_of")):
        if topic and extra_name and _valid(extra_name, max_words=12, max_chars=MAX_TOPIC_CHARS):
            k = normalize_entity(extra_name)
            if k in ents or k == topic_key:
                continue
            ents[k] = _Entity(_display(extra_name), k, -1, 75, 1,
                              (topic_heading if rel_key == "alias" else breadcrumb or extra_name)[:MAX_DESC_CHARS])
            structural.add(k)
            triples.append((2, -1, topic, R[rel_key], extra_name))
    for m in chosen:
        add_entity(m.surface, m.kind, m.start)
    for m in entities_extra:
        add_entity(m.surface, m.kind, m.start, _SCORE.get(m.kind, 10) - 5)
    for surface, kind, pos in extra:
        add_entity(surface, kind, pos)
        ent = ents.get(normalize_entity(surface))
        if ent and ent.desc == ent.name and raw_markdown:
            ent.desc = (breadcrumb or topic)[:MAX_DESC_CHARS]

    # ---- pair relations: adjacent chosen mentions in one sentence
    for a, b in zip(chosen, chosen[1:]):
        if sents and sent_of(a.start) != sent_of(b.start):
            continue
        if a.start < body_start:
            continue
        gap = text[a.end:b.start]
        rel = _connector(gap, text[b.end:b.end + 1])
        if rel is None:
            continue
        if rel == "__alias__":
            triples.append((2, a.start, a.surface, R["alias"], b.surface))
        else:
            triples.append((3, a.start, a.surface, rel, b.surface))

    # ---- cap entities (topic always kept), most specific first
    ranked = sorted((e for k, e in ents.items() if k != topic_key),
                    key=lambda e: (-e.score, -e.count, e.pos, e.key))
    kept = ranked[:MAX_ENTITIES - (1 if topic_key in ents else 0)]
    keep_keys = {e.key for e in kept} | ({topic_key} if topic_key in ents else set())

    # ---- triples: topic mentions, then filter / dedupe / cap
    for e in kept:
        if e.key not in structural:
            triples.append((4, e.pos, topic, R["mentions"], e.name))
    out_triples: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str, str]] = set()
    for _prio, _pos, h, r, t in sorted(triples, key=lambda x: (x[0], x[1], normalize_entity(x[2]), x[3], normalize_entity(x[4]))):
        hk, tk = normalize_entity(h), normalize_entity(t)
        r = _WS.sub(" ", r).strip()
        if not r or hk == tk or hk not in keep_keys or tk not in keep_keys:
            continue
        key = (hk, r.casefold(), tk)
        if key in seen:
            continue
        seen.add(key)
        out_triples.append((ents[hk].name, r, ents[tk].name))
        if len(out_triples) >= MAX_TRIPLES:
            break

    ordered = ([ents[topic_key]] if topic_key in ents else []) + sorted(kept, key=lambda e: (e.pos, e.key))
    entities = [(e.name, e.desc) for e in ordered]
    return entities, out_triples


_REL_EN = {"mentions": "mentions", "is_a": "is a", "defined_in": "defined in", "alias": "also known as",
           "returns": "returns", "param": "takes", "part_of": "part of"}
_REL_ZH = {"mentions": "提及", "is_a": "是", "defined_in": "定义于", "alias": "又称", "returns": "返回",
           "param": "参数类型", "part_of": "属于"}

_CONNECT_STOP_EN = {"and", "or", "the", "a", "an", "of", "in", "on", "to", "for", "with", "as", "by", "at",
                    "from", "is", "are", "be", "its", "their", "this", "that", "such", "e.g", "etc", "nor",
                    "which", "it", "also", "all", "both", "either", "not", "no", "than", "then", "into"}
_CONNECT_STOP_ZH = set("的和与及或等在中、以及或者并且也都就了对将把为被由从向到是")


def _connector(gap: str, after: str) -> str | None:
    """The relation phrase between two adjacent mentions, or None if too long / content-free."""
    g = gap.strip()
    if g in ("(", "（") and after in (")", "）"):
        return "__alias__"
    if not g or re.search(r"[,，、;；:：()（）\[\]\"“”|/]", g) or "\n" in gap:
        return None
    cjk = _CJK.findall(g)
    words = re.findall(r"[A-Za-z][\w'-]*", g)
    if cjk:
        if len(re.sub(r"\s", "", g)) > 10 or not all(_is_cjk(c) or c.isspace() for c in g):
            return None
        content = [c for c in cjk if c not in _CONNECT_STOP_ZH]
        if not content:
            return None
        return g.replace(" ", "")
    if not words or len(g.split()) > 6 or re.search(r"[^\w\s'-]", g):
        return None
    if not [w for w in words if w.lower() not in _CONNECT_STOP_EN]:
        return None
    return " ".join(g.split()).lower()
