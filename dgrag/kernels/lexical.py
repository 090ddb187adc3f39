"""Identifier-aware lexical matching over a whole corpus: BM25 as a sparse matrix, so one query
scores every passage with a few column sums, over the tokens of `kernels.tokens` (identifiers
whole plus their parts, CJK bigrams). The stage-2 reranker (`kernels.bm25`) scores its dense
candidates with the same index built over them alone; this one sees the corpus, with corpus-wide
IDF.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import sparse

from .graph_arrays import row_entries
from .tokens import tokenize


@dataclass(frozen=True)
class LexicalIndex:
    """BM25 (Okapi, k1 and b as usual) of every document for every term, as a CSC matrix."""

    weights: sparse.csc_matrix        # (n_docs, n_terms): the BM25 contribution of a term to a doc
    vocab: dict[str, int]

    @property
    def n_docs(self) -> int:
        return int(self.weights.shape[0])

    def _known(self, text: str) -> list[int]:
        return [self.vocab[t] for t in tokenize(text) if t in self.vocab]

    def term_ids(self, text: str) -> np.ndarray:
        """The distinct known terms of `text`, ascending."""
        return np.unique(np.array(self._known(text), dtype=np.int64))

    def scores(self, query: str) -> np.ndarray:
        """BM25 of `query` against every document (zeros when no query term is known)."""
        cols = self._known(query)
        if not cols:
            return np.zeros(self.n_docs)
        counts = np.bincount(cols)
        used = np.flatnonzero(counts)
        return np.asarray(self.weights[:, used] @ counts[used].astype(np.float64)).ravel()


def build_lexical(docs: Sequence[str], k1: float = 1.2, b: float = 0.75) -> LexicalIndex:
    vocab: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    lengths = np.zeros(len(docs))
    for d, text in enumerate(docs):
        ids = [vocab.setdefault(t, len(vocab)) for t in tokenize(text)]
        lengths[d] = len(ids)
        cols.extend(ids)
        rows.extend([d] * len(ids))
    n, v = len(docs), len(vocab)
    tf = sparse.coo_matrix((np.ones(len(rows)), (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
                           shape=(n, v)).tocsr()
    tf.sum_duplicates()
    df = np.diff(tf.tocsc().indptr)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))  # BM25+'s floor at 0: a term in every doc adds nothing
    avg = float(lengths.mean()) if n and lengths.mean() > 0 else 1.0
    norm = k1 * (1 - b + b * lengths / avg)
    tf = tf.tocoo()
    w = idf[tf.col] * tf.data * (k1 + 1) / (tf.data + norm[tf.row])
    return LexicalIndex(sparse.csc_matrix((w, (tf.row, tf.col)), shape=(n, v)), vocab)


@dataclass(frozen=True)
class TitleIndex:
    """Each document's title (a page's name, a section's heading) as a set of the lexical
    index's terms, to find the documents whose title another document mentions: the passage
    about the person a first passage names, the API reference section whose method a guide
    calls. A title made of common terms is worth little (`specificity`)."""

    titles: sparse.csr_matrix   # (n_docs, n_terms): 1 where the term is in the doc's title
    size: np.ndarray            # title terms per doc (0: no title to mention)
    specificity: np.ndarray     # sum of the title terms' IDF over `scale`, at most 1
    doc_terms: sparse.csr_matrix  # (n_docs, n_terms): the terms each doc holds

    # each title filed under its rarest term (fewest titles), so a document reads only the
    # titles filed under its own terms: a common title term ("chunk", "api") lists most titles
    by_anchor: sparse.csc_matrix = None

    def __post_init__(self):
        if self.by_anchor is None:
            title_df = np.bincount(self.titles.indices, minlength=self.titles.shape[1])
            object.__setattr__(self, "by_anchor", _anchored(self.titles, title_df))

    def mentioned_by(self, doc: int, also: np.ndarray | None = None, need: np.ndarray | None = None) -> np.ndarray:
        """The documents (ascending) whose every title term document `doc` holds, or holds
        with the terms `also` (e.g. the question's). With `need`, a title must also have a
        term of `need` (a boolean per term). It reads only the titles filed under one of
        those terms (their rarest), not every title."""
        lo, hi = self.doc_terms.indptr[doc], self.doc_terms.indptr[doc + 1]
        held = self.doc_terms.indices[lo:hi]
        if also is not None and also.size:
            held = np.union1d(held, also)
        else:
            held = np.sort(held)
        _, entry = row_entries(self.by_anchor.indptr, held)
        cands = np.sort(self.by_anchor.indices[entry])  # one anchor a title: no repeats
        owner, entry = row_entries(self.titles.indptr, cands)
        terms = self.titles.indices[entry]
        at = np.minimum(np.searchsorted(held, terms), max(held.size - 1, 0))
        found = held[at] == terms if held.size else np.zeros(terms.size, dtype=bool)
        hits = np.bincount(owner, weights=found, minlength=cands.size)
        ok = hits >= self.size[cands]  # a title's terms are distinct
        if need is not None:
            ok &= np.bincount(owner, weights=need[terms], minlength=cands.size) > 0
        return cands[ok]

    def terms_of(self, doc: int) -> np.ndarray:
        lo, hi = self.doc_terms.indptr[doc], self.doc_terms.indptr[doc + 1]
        return self.doc_terms.indices[lo:hi]

    def mentioned_in(self, doc: int) -> np.ndarray:
        """Per document, whether document `doc` holds every term of its title."""
        out = np.zeros(self.size.shape[0], dtype=bool)
        out[self.mentioned_by(doc)] = True
        return out


def _anchored(titles: sparse.csr_matrix, title_df: np.ndarray) -> sparse.csc_matrix:
    """(n_docs, n_terms): 1 at each titled document's rarest title term (fewest titles hold
    it; the lower term on a tie)."""
    owner, entry = row_entries(titles.indptr, np.arange(titles.shape[0]))
    terms = titles.indices[entry]
    order = np.lexsort((terms, title_df[terms], owner))  # per document: rarest term first
    first = np.ones(order.size, dtype=bool)
    first[1:] = owner[order][1:] != owner[order][:-1]
    pick = order[first]
    return sparse.csc_matrix((np.ones(pick.size), (owner[pick], terms[pick])), shape=titles.shape)


def term_presence(index: LexicalIndex) -> sparse.csr_matrix:
    """(n_docs, n_terms): 1 where a doc holds a term; several title indexes share one."""
    docs = index.weights.tocsr()
    return sparse.csr_matrix((np.ones(docs.nnz), docs.indices, docs.indptr), shape=docs.shape)


def build_titles(titles: Sequence[str], index: LexicalIndex, scale: float = 8.0,
                 doc_terms: sparse.csr_matrix | None = None) -> TitleIndex:
    rows: list[int] = []
    cols: list[int] = []
    for d, title in enumerate(titles):
        ids = sorted({index.vocab[t] for t in tokenize(title) if t in index.vocab})
        cols.extend(ids)
        rows.extend([d] * len(ids))
    n, v = index.n_docs, len(index.vocab)
    T = sparse.csr_matrix((np.ones(len(rows)), (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
                          shape=(n, v))
    df = np.diff(index.weights.indptr)  # CSC: the docs holding each term
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    spec = np.minimum(1.0, np.asarray(T @ idf).ravel() / scale)
    return TitleIndex(T, np.diff(T.indptr), spec, term_presence(index) if doc_terms is None else doc_terms)
