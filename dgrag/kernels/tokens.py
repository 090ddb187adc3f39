"""The one tokenizer of lexical matching, and the one definition of which characters are CJK.

Documentation questions name things the embedder reads poorly: `router.pushUrl`, `@State`,
`max_file_bytes`, error code 2303198, a Chinese API term. The tokens keep each identifier whole
and add its parts (dots, underscores, camelCase), numbers stay whole, and runs of CJK
ideographs give bigrams (a single ideograph alone), so a query matches a passage however
either is written. Both BM25 paths read these tokens: the corpus-wide one (`lexical`) and the
reranker's over the dense candidates (`bm25`).

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
