"""The offline OpenIE's lexicon: limits, character classes, name normalisation, the language
word lists and token patterns for technical docs in Chinese and English. Data, no extraction
logic. What is one platform's (its CLI programs, file types, field labels, boilerplate,
signatures) is in the packs (openie_packs.py, packs/*.toml)."""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from types import MappingProxyType

from ..kernels.tokens import IDEOGRAPH, IDEOGRAPHS

MAX_ENTITIES = 25
MAX_TRIPLES = 40
MAX_NAME_CHARS = 40          # phrases / CJK terms
MAX_TOPIC_CHARS = 60         # a section topic (a heading)
MAX_IDENT_CHARS = 80         # one identifier (SystemCapability.BundleManager.BundleFramework.Core)
MAX_DESC_CHARS = 160

# --------------------------------------------------------------------------------------
# character classes
# --------------------------------------------------------------------------------------
CJK = IDEOGRAPH
CJK_RUN = re.compile(f"[{IDEOGRAPHS}]+")
LATIN = re.compile(r"[A-Za-z]")
WS = re.compile(r"\s+")

# full-width punctuation kept as is in working text (descriptions stay natural Chinese)
_KEEP_FULLWIDTH = set("，：；（）！？【】")

# stripped from both ends of an entity name; brackets are handled by balance (C++ and C# keep theirs)
_EDGE_PUNCT = " \t\r\n'\"`“”‘’「」『』《》〈〉【】,.;:!?，。；：！？、…·*~|=—–-/\\"
_BRACKETS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def nfkc(text: str) -> str:
    """NFKC everywhere except full-width CJK punctuation (kept for readable descriptions)."""
    if text.isascii():
        return text
    return "".join(ch if ch in _KEEP_FULLWIDTH else unicodedata.normalize("NFKC", ch) for ch in text)


def normalize_entity(name: str) -> str:
    """The entity key: NFKC, no surrounding punctuation/quotes/backticks, single spaces,
    Latin text casefolded (CJK kept as is). A trailing empty call `()` is dropped, so
    `router.pushUrl()` and `router.pushUrl` share a key; `$`/`@` prefixes are kept."""
    s = unicodedata.normalize("NFKC", name or "")
    s = s.replace("\\@", "@").replace("\u200b", "")
    s = WS.sub(" ", s).strip()
    prev = None
    while s != prev:
        prev = s
        if s.endswith("()") and len(s) > 2:
            s = s[:-2]
        s = s.strip(_EDGE_PUNCT)
        # enclosing or unbalanced brackets
        if len(s) >= 2 and s[0] in _BRACKETS and s[-1] == _BRACKETS[s[0]] and _balanced(s[1:-1]):
            s = s[1:-1]
        while s and s[-1] in ")]}>" and not _balanced(s):
            s = s[:-1]
        while s and s[0] in "([{<" and not _balanced(s):
            s = s[1:]
        while s and s[-1] in "([{<" and not _balanced(s):
            s = s[:-1]
        while s and s[0] in ")]}>" and not _balanced(s):
            s = s[1:]
        s = s.strip()
    return s.casefold()


def _balanced(s: str) -> bool:
    depth = {k: 0 for k in _BRACKETS}
    closers = {v: k for k, v in _BRACKETS.items()}
    for ch in s:
        if ch in depth:
            depth[ch] += 1
        elif ch in closers:
            depth[closers[ch]] -= 1
            if depth[closers[ch]] < 0:
                return False
    return all(v == 0 for v in depth.values())


def display_name(name: str) -> str:
    """A readable surface form: NFKC, single spaces, surrounding punctuation stripped, case kept."""
    s = unicodedata.normalize("NFKC", name or "").replace("\\@", "@")
    s = WS.sub(" ", s).strip()
    key = normalize_entity(s)
    if not key:
        return ""
    low = s.casefold()
    i = low.find(key)
    return s[i:i + len(key)] if i >= 0 else s


# --------------------------------------------------------------------------------------
# word lists: data files in openie_words/ (package data), one entry a line, "#" comments
# --------------------------------------------------------------------------------------
WORDS_DIR = Path(__file__).with_name("openie_words")


def read_words(name: str) -> tuple[str, ...]:
    """The entries of openie_words/<name>.txt in file order (order matters for regex alternations)."""
    text = (WORDS_DIR / f"{name}.txt").read_text(encoding="utf-8")
    return tuple(ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#"))


def _keys(name: str) -> frozenset[str]:
    return frozenset(normalize_entity(h) for h in read_words(name))


EN_STOP = frozenset(read_words("en_stop"))
ZH_STOP = frozenset(read_words("zh_stop"))
GENERIC_HEADINGS = _keys("generic_headings")     # the topic walks up the breadcrumb past these
ZH_SUFFIXES = tuple(sorted(set(read_words("zh_suffixes")), key=len, reverse=True))   # longest head noun first
ZH_BOUNDARY_CHARS = frozenset(read_words("zh_boundary_chars"))
ZH_BOUNDARY_BIGRAMS = frozenset(read_words("zh_boundary_bigrams"))
ZH_VERBISH_HEADS = frozenset(read_words("zh_verbish_heads"))
ZH_TECH_MODIFIER_BAD = read_words("zh_tech_modifier_bad")
ZH_LEAD_STRIP = tuple(sorted(read_words("zh_lead_strip"), key=len, reverse=True))   # longest lead first
# lead verbs of 2+ characters end a CJK noun phrase on their left even inside a run: 随机生成非对称密钥 -> 非对称密钥
ZH_CUT_WORDS = tuple(w for w in ZH_LEAD_STRIP if len(w) >= 2 and w not in frozenset(read_words("zh_cut_keep")))
ZH_DEF_BAD_START = read_words("zh_def_bad_start")
ZH_DEF_BAD_END = frozenset(read_words("zh_def_bad_end"))


FUNCTION_WORDS = frozenset(read_words("function_words"))
GENERIC_TAILS = frozenset(read_words("generic_tails"))
SENT_VERBS = frozenset(read_words("sent_verbs"))
URL = re.compile(r"\bhttps?://\S+|\bwww\.\S+")

# --------------------------------------------------------------------------------------
# token patterns (Latin)
# --------------------------------------------------------------------------------------
TOKEN = re.compile(
    r"(?<![A-Za-z0-9_@$./\\-])"
    r"(?:\$\$|@|\$)?"
    r"[A-Za-z_][A-Za-z0-9_$]*"
    r"(?:(?:[.\-/]|::)[A-Za-z0-9_$]+)*"
    r"(?:<[A-Za-z_][A-Za-z0-9_.,<> ]{0,30}>)?"
    r"(?:\(\))?"
)
VERSIONISH = re.compile(r"^[vV]?\d[\d.x+]*(?:[-\s]?(?:beta|release|canary|rc)\d*)?$", re.I)
CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2,}[a-z]|^[a-z]+[A-Z]")
ACRONYM = re.compile(r"^[A-Z][A-Z0-9]{1,7}s?$")
ABBREV = frozenset(read_words("abbrev"))

SENT_END = re.compile(r"[。！？!?；;]+|\.(?=\s|$)(?<![A-Z]\.)|\n+")

SCORE = MappingProxyType({
    "defined": 100, "code": 90, "decorator": 90, "api": 85, "file": 85, "command": 85, "path": 80,
    "signature": 88, "quoted": 70, "camel": 70, "phrase": 68, "ident": 70, "bold": 65,
    "field_value": 62, "cjk_tech": 60, "isa_tail": 55, "acronym": 50, "latin_in_zh": 45,
    "proper": 40, "cjk_np": 30, "via": 35, "topic": 95,
})

# API reference sentences open with one of these verbs: "Defines a binary data array.", "获取…"
_EN_API_VERBS = read_words("api_verbs_en")
EN_API_VERB = re.compile(
    r"^(?P<v>" + "|".join(_EN_API_VERBS) + r")\s+"
    r"(?:(?:a|an|the|all|this|that|one|some|each|information about|details of)\s+)*(?P<o>[^,;:.()]{2,80})")
ZH_API_VERB = re.compile(r"^(?P<v>" + "|".join(read_words("api_verbs_zh")) + r")(?P<o>[^,，。;；:：!?！？]{2,40})")
# their capitalised words: a sentence-initial "Creates" is not part of a name run
API_VERBS_EN = frozenset(w.lower() for v in _EN_API_VERBS for w in re.findall(r"[A-Z][a-z]+", v))
