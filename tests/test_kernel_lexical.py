import math

import numpy as np

from dgrag.kernels.lexical import build_lexical
from dgrag.kernels.tokens import tokenize


def test_bm25_matrix_gives_okapi_scores():
    docs = ["pushUrl pushUrl", "back", "pushUrl back back back"]
    ix = build_lexical(docs)
    # by hand: n=3; "pushurl" in docs 0, 2 (df 2); "push", "url" likewise; doc lengths 6, 1, 6
    n, avg, k1, b = 3, (6 + 1 + 6) / 3, 1.2, 0.75
    idf = math.log1p((n - 2 + 0.5) / (2 + 0.5))

    def w(tf, dl):
        return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avg))

    s = ix.scores("pushUrl")  # three query tokens: pushurl, push, url
    assert np.allclose(s, [3 * w(2, 6), 0.0, 3 * w(1, 6)])
    assert ix.scores("nothing here")[0] == 0.0 and ix.scores("").tolist() == [0.0, 0.0, 0.0]


def test_a_repeated_query_term_counts_twice():
    ix = build_lexical(["alpha beta", "beta gamma", "delta"])
    once, twice = ix.scores("alpha"), ix.scores("alpha alpha")
    assert twice[0] == 2 * once[0] > 0 and twice[1] == 0.0


def test_error_code_finds_its_section_among_many():
    docs = [f"section {i} about layout" for i in range(50)] + ["2303198 the file does not exist"]
    s = build_lexical(docs).scores("got error 2303198 when opening")
    assert int(np.argmax(s)) == 50 and np.count_nonzero(s) == 1


def test_titles_mentioned_in_a_document_every_term_and_their_specificity():
    from dgrag.kernels.lexical import build_titles

    docs = ["Steve Hillage\nan English guitarist", "Green\nthe song Green was performed by Steve Hillage",
            "Hillage Road\na road", "Example\nexample example"]
    index = build_lexical(docs)
    titles = build_titles(["Steve Hillage", "Green", "Hillage Road", "Example"], index)
    # doc 1 names Steve Hillage (both terms) and its own title; not "Hillage Road" (no "road")
    assert titles.mentioned_in(1).tolist() == [True, True, False, False]
    assert titles.mentioned_in(0).tolist() == [True, False, False, False]
    assert titles.size.tolist() == [2, 1, 2, 1]
    # with the question's terms: "road" asked, "hillage" in doc 1, so "Hillage Road" is named;
    # a title whose terms all come from the question is not (one must come from the passage)
    asked = index.term_ids("which road is it, and what is an example")
    need = np.zeros(len(index.vocab), dtype=bool)
    need[titles.terms_of(1)] = True
    assert titles.mentioned_by(1, also=asked, need=need).tolist() == [0, 1, 2]
    assert titles.mentioned_by(1, also=asked).tolist() == [0, 1, 2, 3]
    n = 4
    idf = lambda df: np.log1p((n - df + 0.5) / (df + 0.5))  # noqa: E731
    assert np.allclose(titles.specificity, np.minimum(1.0, [(idf(2) + idf(3)) / 8, idf(1) / 8,
                                                            (idf(3) + idf(1)) / 8, idf(1) / 8]))


def test_titles_mentioned_by_a_document_equal_a_term_by_term_check():
    """`mentioned_by` reads only the titles sharing a term with the document; it finds what a
    check of every title against the document's terms finds, and nothing for a title-less doc."""
    from dgrag.kernels.lexical import build_titles

    rng = np.random.default_rng(4)
    words = [f"w{i}" for i in range(30)]
    docs = [" ".join(rng.choice(words, rng.integers(1, 12))) for _ in range(200)]
    names = [" ".join(rng.choice(words, rng.integers(0, 3), replace=False)) for _ in range(200)]
    index = build_lexical(docs)
    titles = build_titles(names, index)
    found = 0
    for d in range(len(docs)):
        held = set(tokenize(docs[d]))
        want = [t for t, name in enumerate(names) if name and set(tokenize(name)) <= held]
        assert titles.mentioned_by(d).tolist() == want
        assert np.flatnonzero(titles.mentioned_in(d)).tolist() == want
        found += len(want)
        # with a question's terms, a title needing one term of the document itself
        asked = set(rng.choice(words, 3).tolist())
        need = np.zeros(len(index.vocab), dtype=bool)
        need[titles.terms_of(d)] = True
        got = titles.mentioned_by(d, also=index.term_ids(" ".join(asked)), need=need).tolist()
        assert got == [t for t, name in enumerate(names)
                       if name and set(tokenize(name)) <= held | set(tokenize(" ".join(asked)))
                       and set(tokenize(name)) & held]
    assert found > 100
