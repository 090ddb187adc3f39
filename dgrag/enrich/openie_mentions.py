"""Candidate finders of the offline OpenIE: every span of a chunk's text that may name an
entity, as a `Mention` whose kind (api, file, camel, cjk_np, ...) sets its score.

Latin tokens (identifiers, decorators, API names, file names, paths, acronyms, capitalised
words and the multi-word names they form), command lines, quoted terms, CJK noun phrases,
and the inline code / bold spans of the chunk's raw Markdown. Overlaps are resolved later."""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from .openie_lexicon import (
    MAX_NAME_CHARS, ABBREV, ACRONYM, API_VERBS_EN, CAMEL, CJK, CJK_RUN, FUNCTION_WORDS, GENERIC_TAILS, LATIN,
    SCORE, SENT_VERBS, TOKEN, URL, ZH_BOUNDARY_BIGRAMS, ZH_BOUNDARY_CHARS, ZH_CUT_WORDS, ZH_LEAD_STRIP, ZH_STOP,
    ZH_SUFFIXES, ZH_TECH_MODIFIER_BAD, ZH_VERBISH_HEADS, nfkc, normalize_entity,
)
from .openie_packs import Lexicon
from .openie_text import is_cjk, valid_name


@dataclass(frozen=True)
class Mention:
    """A span of the text that may name an entity; its kind sets its score."""
    start: int
    end: int
    surface: str
    kind: str

    @property
    def score(self) -> int:
        return SCORE.get(self.kind, 10)



def _classify_token(lex: Lexicon, tok: str, text: str, start: int, zh_context: bool,
                    sentence_start: bool) -> str | None:
    stop = lex.en_stop
    core = tok[:-2] if tok.endswith("()") else tok
    low = core.lower()
    if low in ABBREV or low.rstrip(".") in ABBREV:
        return None
    if tok.startswith("@"):
        return "decorator" if len(core) > 2 else None
    if tok.startswith("$"):
        return "ident" if len(core) > 1 else None
    if lex.file_ext.search(core) and not core.startswith("."):
        return "file"
    if "/" in core:
        parts = [p for p in core.split("/") if p]
        if len(parts) >= 2 and not all(len(p) <= 3 and p.isupper() for p in parts) and low not in ("and/or", "or/and"):
            return "path"
        return None
    nxt = text[start + len(tok):start + len(tok) + 1]
    if tok.endswith("()") or (nxt == "(" and (CAMEL.search(core) or "." in core or "_" in core)):
        return "api"
    if "." in core or "::" in core:
        parts = re.split(r"\.|::", core)
        if all(p.isdigit() for p in parts[1:]):
            return None
        if len(parts) == 2 and re.fullmatch(r"[a-z]{3,}", parts[0]) and re.fullmatch(r"[A-Z][a-z]+", parts[1]) \
                and (parts[1].lower() in stop or parts[1].lower() in SENT_VERBS):
            return None                      # "instance.Call createCipher()": a missing space
        if any(LATIN.search(p) for p in parts[1:]):
            return "api"
        return None
    if "<" in core:
        return "camel"
    if "_" in core.strip("_"):
        return "ident"
    if ACRONYM.match(core):
        return "acronym" if core.rstrip("s").upper() not in ("I", "OK", "TODO", "NOTE", "A") else None
    if CAMEL.search(core):
        return "camel"
    if "-" in core:
        if any(c.isupper() for c in core[1:]) or re.search(r"\d", core):
            return "camel"
        return "latin_in_zh" if zh_context and len(core) > 2 else None
    if zh_context:
        if len(core) >= 2 and low not in stop:
            return "latin_in_zh"
        return None
    if core[0].isupper() and len(core) >= 3 and not sentence_start and low not in stop:
        return "proper"
    return None


def latin_mentions(lex: Lexicon, text: str, body_start: int, sent_starts: set[int], zh: bool) -> list[Mention]:
    return _merge_token_runs(lex, text, _scan_tokens(lex, text, sent_starts, zh), body_start)


def _scan_tokens(lex: Lexicon, text: str, sent_starts: set[int], zh: bool) -> list[tuple]:
    """Every Latin token as (start, end, token, kind or None, at a sentence start)."""
    cleaned = URL.sub(lambda m: " " * len(m.group(0)), text)
    starts = sorted(sent_starts)
    raw = []
    for m in TOKEN.finditer(cleaned):
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
        zh_ctx = zh or is_cjk(text[s - 1:s]) or is_cjk(text[s + len(tok):s + len(tok) + 1])
        kind = _classify_token(lex, tok, text, s, zh_ctx, at_sentence_start)
        raw.append((s, s + len(tok), tok, kind, at_sentence_start))
    return raw


def _merge_token_runs(lex: Lexicon, text: str, raw: list[tuple], body_start: int) -> list[Mention]:
    """Mentions of the scanned tokens, runs of capitalised / technical tokens merged into one name."""
    out: list[Mention] = []
    latin_heading = not CJK.search(text[:body_start])

    def heading_word(pos: int, kind: str) -> bool:
        """An ordinary word of the heading line: the topic already covers it."""
        return pos < body_start and (kind == "proper" or (kind == "latin_in_zh" and latin_heading))

    # merge runs of capitalised / technical tokens separated by one space: DevEco Studio, ACE Tools
    i = 0
    while i < len(raw):
        s, e, tok, kind, _ = raw[i]
        group, j = _token_run(lex.en_stop, text, raw, i)
        group = _drop_leading_stopwords(lex.en_stop, group)
        if len(group) == 1 and j > i:
            g = group[0]
            if g[3] and not heading_word(g[0], g[3]):
                out.append(Mention(g[0], g[1], g[2], g[3]))
            i = j + 1
            continue
        run = _run_mentions(text, group, body_start)
        if run is not None:
            out.extend(run)
            i = j + 1
            continue
        if kind and not heading_word(s, kind):
            out.append(Mention(s, e, tok, kind))
        i += 1
    return out


def _token_run(stop: frozenset[str], text: str, raw: list[tuple], i: int) -> tuple[list[tuple], int]:
    """The run of capitalised / technical tokens from raw[i], one space apart, and its last index."""
    _, _, tok, kind, _ = raw[i]
    j = i
    group = [raw[i]]
    capish_start = tok[:1].isupper() or kind in ("camel", "acronym")
    while capish_start and j + 1 < len(raw):
        ns, _, ntok, nkind, _ = raw[j + 1]
        gap = text[group[-1][1]:ns]
        if gap != " " or len(group) >= (6 if group[0][2].lower() in stop else 5):
            break
        if not (ntok[:1].isupper() or nkind in ("camel", "acronym")) or ntok.lower() in FUNCTION_WORDS:
            break
        if "\n" in gap:
            break
        group.append(raw[j + 1])
        j += 1
    return group, j


def _leading_stop(stop: frozenset[str], low: str, at_sentence_start: bool) -> bool:
    return low in FUNCTION_WORDS or (at_sentence_start and low in stop and low != "new")


def _drop_leading_stopwords(stop: frozenset[str], group: list[tuple]) -> list[tuple]:
    # drop leading stop-words ("The DevEco Studio", "In ArkUI"); mid-sentence only function words:
    # "New York City", "First Republic" are names
    while len(group) > 1 and (_leading_stop(stop, group[0][2].lower(), group[0][4]) or (
            group[0][4] and group[0][3] is None and (
                group[0][2].lower() in SENT_VERBS or group[0][2].lower() in API_VERBS_EN
                or group[0][2].lower().rstrip("s") in SENT_VERBS))):
        group = group[1:]
    return group


def _run_mentions(text: str, group: list[tuple], body_start: int) -> list[Mention] | None:
    """The mentions a multi-token name run yields (possibly none), or None if it is not one."""
    capish = [g for g in group if g[2][:1].isupper() or g[3] in ("camel", "acronym")]
    strong = [g for g in group if g[3] in ("camel", "acronym", "latin_in_zh", "proper")]
    if not (len(group) >= 2 and len(capish) == len(group) and strong
            and all(g[3] not in ("api", "file", "path") for g in group)):
        return None
    gs, ge = group[0][0], group[-1][1]
    surface = text[gs:ge]
    technical = any(g[3] in ("camel", "acronym", "ident") for g in group)
    if gs < body_start and not technical:
        return []          # Title Case words of the heading line: the topic covers them
    if len(surface) <= MAX_NAME_CHARS:
        out = [Mention(gs, ge, surface, "phrase")]
        # "ArkUI-X SDK", "ArkTS API": the product name stays an entity too
        g0, g1 = group[0], group[-1]
        if len(group) == 2 and g0[3] == "camel" and (
                g1[3] == "acronym" or g1[2].lower() in GENERIC_TAILS):
            out.append(Mention(g0[0], g0[1], g0[2], g0[3]))
        return out
    # too long for one name: keep its technical words, not a truncated tail of it
    return [Mention(g[0], g[1], g[2], g[3]) for g in group if g[3] in ("camel", "acronym", "ident")]


def command_mentions(lex: Lexicon, text: str) -> list[Mention]:
    out: list[Mention] = []
    if lex.command is None:
        return out
    for m in lex.command.finditer(text):
        prog = m.group(1)
        args = m.group(2).split()
        allowed = lex.cli[prog]
        if allowed is not None and args[0] not in allowed and not _argument(args[0], allowed):
            continue
        if allowed is None and args[0].lower() in lex.en_stop and not args[0].startswith("-"):
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
        out.append(Mention(m.start(), end, text[m.start():end], "command"))
    return out


def _argument(arg: str, allowed: frozenset[str]) -> bool:
    """A pack's "FILE" takes a file or path argument (rustc src/main.rs), its "-" an option (--version)."""
    return ("FILE" in allowed and ("." in arg.strip(".") or "/" in arg)) or ("-" in allowed and arg.startswith("-"))


_GITHUB_HANDLE = re.compile(r"\[@([A-Za-z0-9][\w-]*)\]\(https?://github\.com/([A-Za-z0-9][\w-]*)/?\)")
_CREDIT = re.compile(r"(?:\bby|\b[Tt]hanks(?: to)?|\b[Cc]ontributed by)\s+@([A-Za-z0-9][\w-]*)\b(?![.(/])")


def user_handles(raw_markdown: str | None, text: str, release: bool) -> set[str]:
    """GitHub users, lowercased: "@x" linked to github.com/x, and in a release's notes (`release`)
    "@x" credited ("by @x", "thanks to @x"). Not decorators."""
    found = {a.lower() for a, b in _GITHUB_HANDLE.findall(raw_markdown or "") if a.lower() == b.lower()}
    if release:
        found |= {h.lower() for h in _CREDIT.findall(text)}
    return found


_QUOTED = re.compile(r"「([^」\n]{2,40})」|“([^”\n]{2,40})”|《([^》\n]{2,40})》|『([^』\n]{2,40})』|\"([^\"\n]{2,40})\"")


def quoted_mentions(text: str) -> list[Mention]:
    out = []
    for m in _QUOTED.finditer(text):
        gi = next(i for i in range(1, 6) if m.group(i) is not None)
        inner = m.group(gi)
        if "%{" in inner or sum(not (c.isalnum() or c.isspace() or c in "._-@$") for c in inner) > 0.3 * len(inner):
            continue
        if len(inner.split()) > 5 or re.search(r"[。，,!?！？；;]", inner) or inner.strip().endswith(".") \
                or len(CJK.findall(inner)) > 15:
            continue
        out.append(Mention(m.start(gi), m.end(gi), inner, "quoted"))
    return out


def cjk_mentions(text: str, latin: list[Mention]) -> list[Mention]:
    """ArkUI框架 / UIAbility组件 (token + CJK head noun) and plain CJK noun phrases (状态管理)."""
    return _cjk_tech_phrases(text, latin) + _cjk_noun_phrases(text)


def _cjk_tech_phrases(text: str, latin: list[Mention]) -> list[Mention]:
    """A technical Latin token and the CJK head noun right after it: ArkUI框架, UIAbility组件."""
    out = []
    for t in latin:
        if t.kind not in ("camel", "acronym", "latin_in_zh", "phrase", "decorator", "api", "ident", "proper"):
            continue
        after = CJK_RUN.match(text, t.end)
        if not after:
            continue
        run = after.group(0)[:6]
        best = 0
        for suf in ZH_SUFFIXES:
            # the head noun may follow one or two modifier characters: UI开发框架
            for k in range(0, min(len(run) - len(suf), 3) + 1):
                if run[k:k + len(suf)] == suf and not run[:k].startswith(ZH_TECH_MODIFIER_BAD) \
                        and all(c not in ZH_BOUNDARY_CHARS for c in run[:k + len(suf)]):
                    best = max(best, k + len(suf))
        if best:
            surface = text[t.start:t.end + best]
            out.append(Mention(t.start, t.end + best, surface, "cjk_tech"))
    return out


def _cjk_noun_phrases(text: str) -> list[Mention]:
    """Plain CJK noun phrases ending in a head noun (状态管理), at most one per head noun."""
    out = []
    for m in CJK_RUN.finditer(text):
        run, base = m.group(0), m.start()
        if len(run) < 3:
            continue
        taken_until = -1
        # scan head nouns from right to left; each yields at most one phrase
        positions = []
        for i in range(len(run)):
            for suf in ZH_SUFFIXES:
                if run.startswith(suf, i):
                    if suf not in ZH_VERBISH_HEADS:
                        positions.append((i + len(suf), suf))
                    break
        for end, suf in positions:
            if end <= taken_until:
                continue
            phrase = _noun_phrase_ending_at(run, end, suf)
            if phrase is None:
                continue
            ps = base + end - len(phrase)
            out.append(Mention(ps, base + end, phrase, "cjk_np"))
            taken_until = end
    return out


def _noun_phrase_ending_at(run: str, end: int, suf: str) -> str | None:
    """The noun phrase of a CJK run ending with head noun `suf` at `end`, or None if unfit."""
    j = end - len(suf)
    k = j
    while k > 0 and j - k < 10 and run[k - 1] not in ZH_BOUNDARY_CHARS:
        k -= 1
    if k > 0 and run[k - 1:k + 1] in ZH_BOUNDARY_BIGRAMS:
        k += 1
    phrase = run[k:end]
    cut = max((phrase.rfind(w, 0, len(phrase) - len(suf)) + len(w) for w in ZH_CUT_WORDS
               if 0 <= phrase.rfind(w, 0, len(phrase) - len(suf))), default=0)
    phrase = phrase[cut:]
    changed = True
    while changed:
        changed = False
        for lead in ZH_LEAD_STRIP:
            if phrase.startswith(lead) and len(phrase) - len(lead) >= len(suf):
                phrase = phrase[len(lead):]
                changed = True
                break
    if len(phrase) <= len(suf) or len(phrase) < 3 or len(phrase) > 10:
        return None
    if normalize_entity(phrase) in ZH_STOP:
        return None
    return phrase


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


def code_spans(lex: Lexicon, raw_markdown: str, text: str) -> list[tuple[str, int]]:
    """Inline code spans of the prose part of raw Markdown -> (span, position in text or -1)."""
    body = "\n".join(_prose_lines(raw_markdown))
    found = []
    for m in re.finditer(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", body):
        span = nfkc(m.group(2).strip()).replace("\\@", "@")
        if not span or "${" in span or "\n" in span:
            continue
        if len(span.split()) > 5 or not valid_name(span, stop=lex.en_stop) or "%{" in span:
            continue
        if sum(not (c.isalnum() or c in " ._-@$") for c in span) > 0.3 * len(span):
            continue
        found.append((span, text.find(span)))
    return found


def bold_spans(lex: Lexicon, raw_markdown: str) -> list[str]:
    out = []
    for ln in _prose_lines(raw_markdown):
        parts = ln.split("**")
        for k in range(1, len(parts) - 1, 2):          # odd segments are bold
            b = nfkc(parts[k]).replace("\\@", "@").strip().strip("“”\"'「」")
            if re.match(r"^(?:\d+(?:\.\d+)*[.、)]|[一二三四五六七八九十]+、|(?:step|步骤)\s*\d)", b, re.I):
                continue
            if not 2 <= len(b) <= 40:
                continue
            if re.search(r"[:：。.,，!?]$", b) or normalize_entity(b) in lex.skip_labels \
                    or normalize_entity(b) in lex.field_labels:
                continue
            if len(b.split()) > 4 or re.search(r"[,，。;；、]", b) or len(CJK.findall(b)) > 15:
                continue
            out.append(b)
    return out
