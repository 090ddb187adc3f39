"""The one tokenizer of lexical matching, and the one definition of which characters are CJK.

Documentation questions name things the embedder reads poorly: `router.pushUrl`, `@State`,
`max_file_bytes`, error code 2303198, a Chinese API term. The tokens keep each identifier whole
and add its parts (dots, underscores, camelCase), numbers stay whole, and runs of CJK
ideographs give bigrams (a single ideograph alone), so a query matches a passage however
either is written: `tokenize`, the corpus-wide BM25's (`lexical`) and the extractive answer's.

The stage-2 reranker's BM25 over the dense candidates (`bm25`) reads `whole_tokens`: the same
CJK ideographs and identifier characters, but identifiers split only at dots and `@` (no
camelCase parts, no stop words) and CJK unigrams beside the bigrams. Among 100 candidates that
all match the question's topic, a whole identifier is what tells them apart; its camelCase
parts (`set`, `mode`) match the neighbours too. Reading `tokenize` there instead (with
`lexical`'s BM25 over the candidates) was measured with `dgrag eval --methods dense,diffusion
--k 1,2,5` on the three doc sites and `bench.identity` on MuSiQue-100: the default method lost
1 to 3 points on the dev splits (redux R@1 and R@2, rust-book R@5, MuSiQue R@1/5/10) for gains
on the test splits (vitepress R@2 +2.7, R@5 +5.4), and an identifier's own section lost stage 2
to sections sharing its parts (tests/test_ranking.py); the ranking's weights were fitted on
these scores.

Every other place that treats CJK text apart (the token estimate, the language guess, answer
matching, query terms, sentence ends) builds its pattern from `IDEOGRAPHS` or `CJK` below.
"""
from __future__ import annotations

import re
from functools import lru_cache

# Han ideographs: extension A, the unified block, the compatibility block (as a character-class
# body, for building patterns). U+4DC0-4DFF (Yijing hexagrams) sits between the first two and
# is not text.
IDEOGRAPHS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# all the scripts written without spaces between words: kana, the ideographs, Hangul syllables
CJK = "\u3040-\u30ff" + IDEOGRAPHS + "\uac00-\ud7af"
IDEOGRAPH = re.compile(f"[{IDEOGRAPHS}]")

_TOKEN = re.compile(f"([{IDEOGRAPHS}]+)|(@?[A-Za-z0-9_]+(?:\\.[A-Za-z0-9_]+)*)")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# words that carry no topic in a docs question; IDF would discount them anyway, but leaving
# them out keeps long English questions from touching most of the corpus's postings
STOP = frozenset("""a an the and or of to in on for with by at from as is are was were be been it its this that
these those do does did how what which when where why who can could should would will i my me we our you your
there here not no if then than so into about use using used get set""".split())


def tokenize(text: str) -> list[str]:
    """Lowercased tokens: identifiers whole plus their parts, numbers, CJK bigrams."""
    out: list[str] = []
    for run, word in _TOKEN.findall(text):
        if run:
            out.extend([run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)])
        else:
            out.extend(_word(word))
    return out


@lru_cache(maxsize=200_000)
def _word(word: str) -> tuple[str, ...]:
    """One identifier's tokens (cached: a corpus repeats its words)."""
    low = word.lower()
    if low in STOP:
        return ()
    pieces = [p for p in re.split(r"[._@]+", word) if p]
    parts = pieces + [c for p in pieces for c in _CAMEL.findall(p)]
    seen = dict.fromkeys([low] + [p.lower() for p in parts])
    return tuple(t for t in seen if t == low or t not in STOP)



# a capitalised word right after one of these (or at the text's start) opens a sentence and is no name
_OPENERS = ".?!:;\"'(\n“「（"
_SHAPED = re.compile(r"[a-z][A-Z]|[A-Z]{2}|[._@]")  # camelCase, acronyms, dotted, snake_case, @decorators


def named_terms(text: str) -> list[str]:
    """The identifiers and proper names a question names, as `tokenize`'s lowercased pieces (split
    at dots, underscores and `@`): in a question with Han ideographs every Latin word (it is a name
    there: `Flutter`, `setState`); otherwise the words written as code or names: camelCase, an
    acronym, dotted, snake_case, `@`, or capitalised past a sentence's start. Numbers and
    quantities (a piece that starts with a digit: `30MB`, `1080p`), single letters and stop words
    are left out. Distinct, in order."""
    han = IDEOGRAPH.search(text) is not None
    out: dict[str, None] = {}
    end = 0  # where the previous token ended
    for m in _TOKEN.finditer(text):
        gap = text[end:m.start()].rstrip(" \t")
        last = gap[-1:] or text[end - 1:end]  # the character before the word, blanks aside
        end, word = m.end(), m.group(2)
        if not word or not (han or _SHAPED.search(word) or (word[0].isupper() and last not in _OPENERS)):
            continue  # at the start `last` is "", which `in` finds in any string
        for piece in re.split(r"[._@]+", word):
            low = piece.lower()
            if len(low) > 1 and not low[0].isdigit() and low not in STOP:
                out[low] = None
    return list(out)


_WHOLE = re.compile(f"([{IDEOGRAPHS}]+)|([a-z0-9_@.]+)")


def whole_tokens(text: str) -> list[str]:
    """Lowercased tokens for the stage-2 rerank: identifiers whole plus their parts at dots and
    `@`, CJK unigrams and bigrams, no punctuation."""
    out: list[str] = []
    for run, word in _WHOLE.findall(text.lower()):
        if run:
            out.extend(list(run) + [run[i:i + 2] for i in range(len(run) - 1)])
            continue
        word = word.strip(".")  # sentence dots are punctuation, inner dots are member access
        if not re.search(r"[a-z0-9]", word):
            continue
        parts = [p for p in re.split(r"[.@]+", word) if re.search(r"[a-z0-9]", p)]
        out.extend([word] + [p for p in parts if p != word])
    return out


# a release's heading in a changelog: "2.0.0-alpha.19 (2026-08-02)", "v1.4.0 - 2024-05-01", "0.115.0",
# "[1.0.0] - 2017-06-20"; the version alone or with its date ("3.0 - RTK Query" is a section about a
# version, not a release's notes). The offline OpenIE's topic of a changelog section and the
# ranking's release notes (retrieve/shape.py) both read it.
RELEASE_HEADING = re.compile(r"^\[?[vV]?(?P<v>\d+(?:\.\d+)+(?:[-+][\w.]+)?)\]?"
                             r"(?:\s*(?:[-–—]\s*)?\(?\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\)?)?\s*$")
# a page is release notes when it has this many release headings and at least this share of its
# sections sit under one (a migration guide with a "2.0" section is not)
MIN_RELEASES = 3
RELEASE_SHARE = 0.5


def release_page(crumbs: list[list[str]]) -> bool:
    """Whether a page whose sections have these breadcrumbs (their headings) is release notes."""
    under = [any(RELEASE_HEADING.match(h.strip()) for h in c) for c in crumbs]
    heads = {c[-1] for c in crumbs if c and RELEASE_HEADING.match(c[-1].strip())}
    return bool(crumbs) and len(heads) >= MIN_RELEASES and sum(under) >= RELEASE_SHARE * len(crumbs)
