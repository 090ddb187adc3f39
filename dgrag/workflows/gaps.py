"""The gap report: what the docs fail to answer, read from the question log (`asked`, `feedback`).

A logged answer failed when the answer said the docs don't cover the question (`unanswered`),
when its confidence (retrieve/confidence.py: 0.5 at the index's calibrated threshold) is below
0.5, or when its thumbs add up below zero. The failed questions are embedded with the index's
own embedder (the model its file records) and clustered: average-linkage agglomeration,
merging while two clusters' mean pairwise similarity is at least `LINK_COSINE`
(deterministic: ties merge the lowest indexes first). The similarity is the cosine of the
vectors centred on the mean of the packaged off-domain questions (the confidence calibration's
list): multilingual-e5 gives any two questions a cosine of 0.8 or more, a direction they all
share; taken away, paraphrases stay close and different topics fall apart over a wide range of
thresholds (on the dev log plain cosines find the most planted gaps at 0.90 alone, fewer at
0.89 and 0.91; centred ones hold it over a range). The small e5 also puts a question nearer to
its own language's questions than to its translation's: two questions in different languages
score `language_offset` lower on average over the log (no labels: the mean cosine of pairs in
one language less that of pairs across languages), and that offset is added back to every
cross-language pair, so a topic asked in en and zh is one gap, not two. A gap is a cluster of
at least `MIN_GAP` questions (a question alone is listed apart, as a one-off); gaps are ranked
by count, then by how low their confidence is. Each gap names the index's sections nearest to its
centroid and what those lack: the cluster's key terms (words in at least half of its
questions, at least two, and in at most COMMON_SHARE of the index's sections: not the site's
own name or platforms) that none of the nearest sections holds.

`LINK_COSINE` was chosen on a dev log (bench/gaps.py, seed 1: the middle of the plateau where
the most planted gaps are found with no spurious cluster) and reported on a test log with other
gap topics (seed 2): docs/benchmarks.md, "The gap report and translation gaps". The most asked
topics are the same clustering over every question. At most `MAX_QUESTIONS` questions (the
latest) are clustered: the clustering's work grows as the square of its input.
"""
from __future__ import annotations

import datetime as _dt
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..core import language_of
from ..errors import DgragError
from ..kernels.lexical import tokenize

LINK_COSINE = 0.60
MIN_PER_LANGUAGE = 5  # fewer questions in a language: no offset measured, none added
MIN_GAP = 2
LOW_CONFIDENCE = 0.5
MAX_QUESTIONS = 3000
NEAREST = 3
EXAMPLES = 5
TOPICS = 10
COMMON_SHARE = 0.04  # a word in more of the index's sections than this says nothing of a gap's topic
# question words, which the docs rarely hold but every question does
_GENERIC = frozenset("way work works need want make possible support supported there any some one "
                     "怎么 如何 什么 哪个 哪些 需要 可以 是否 支持 怎样".split())


@dataclass
class GapReport:
    since: str
    model: str
    asked: int
    answered: int
    failed: int
    clustered: int                       # questions clustered (the latest MAX_QUESTIONS)
    gaps: list[dict] = field(default_factory=list)
    one_offs: list[dict] = field(default_factory=list)
    topics: list[dict] = field(default_factory=list)
    translations: dict | None = None
    link_cosine: float = LINK_COSINE
    language_offset: float = 0.0        # added to the similarity of two questions in different languages

    @property
    def answered_pct(self) -> float:
        return round(100.0 * self.answered / self.asked, 1) if self.asked else 0.0

    def as_dict(self) -> dict:
        return {"since": self.since, "model": self.model, "asked": self.asked, "answered": self.answered,
                "answered_pct": self.answered_pct, "failed": self.failed, "clustered": self.clustered,
                "link_cosine": self.link_cosine, "language_offset": self.language_offset, "gaps": self.gaps,
                "one_offs": self.one_offs,
                "topics": self.topics, "translations": self.translations}


def since_date(text: str) -> str:
    """--since: an ISO date or date-time (UTC unless it says otherwise), as the log's timestamps
    compare; a bad value is a DgragError naming the form wanted."""
    text = (text or "").strip()
    if not text:
        return ""
    try:
        when = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise DgragError(f"--since wants a date such as 2026-05-01 or 2026-05-01T12:00:00, not {text!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc).isoformat(timespec="seconds")


def why_failed(row: dict) -> list[str]:
    """Why a logged answer counts as failed ([] when it did not)."""
    why = []
    if row.get("unanswered"):
        why.append("unanswered")
    elif row.get("confidence") is not None and row["confidence"] < LOW_CONFIDENCE:
        why.append("low_confidence")
    if row.get("rating", 0) < 0:
        why.append("thumbs_down")
    return why


def agglomerate(vectors: np.ndarray, threshold: float, languages: list[str] | None = None,
                offset: float = 0.0) -> list[list[int]]:
    """Average-linkage clusters of unit rows: merge the two clusters of highest mean pairwise
    cosine while it is >= `threshold` (Lance-Williams update); a pair of rows whose `languages`
    differ has `offset` added to its cosine. Largest first."""
    n = int(vectors.shape[0])
    if n == 0:
        return []
    sim = (vectors @ vectors.T).astype(np.float64)
    if languages is not None and offset:
        lang = np.array(languages, dtype=object)
        sim += offset * (lang[:, None] != lang[None, :])
    np.fill_diagonal(sim, -np.inf)
    size = np.ones(n)
    members: list[list[int]] = [[i] for i in range(n)]
    while n > 1:
        i, j = divmod(int(np.argmax(sim)), n)
        if sim[i, j] < threshold:
            break
        i, j = min(i, j), max(i, j)
        merged = (size[i] * sim[i] + size[j] * sim[j]) / (size[i] + size[j])
        sim[i, :], sim[:, i] = merged, merged
        sim[j, :], sim[:, j] = -np.inf, -np.inf
        sim[i, i] = -np.inf
        size[i] += size[j]
        members[i] += members[j]
        members[j] = []
    return sorted((sorted(m) for m in members if m), key=lambda m: (-len(m), m[0]))


_CENTRES: dict[str, np.ndarray] = {}


def centre_of(embedder) -> np.ndarray:
    """The mean vector of the packaged off-domain questions under this embedder (once per model)."""
    from ..retrieve.confidence import off_domain_questions

    key = getattr(embedder, "model_id", "") or repr(embedder)
    if key not in _CENTRES:
        _CENTRES[key] = np.asarray(embedder.embed_queries(off_domain_questions()), dtype=np.float32).mean(axis=0)
    return _CENTRES[key]


def centred(vectors: np.ndarray, centre: np.ndarray) -> np.ndarray:
    out = vectors - centre
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def language_offset(vectors: np.ndarray, languages: list[str]) -> float:
    """Mean cosine of two rows in one language less that of two rows in different languages
    (>= 0; 0 unless at least two languages have MIN_PER_LANGUAGE rows each)."""
    groups = {lang: vectors[[i for i, x in enumerate(languages) if x == lang]] for lang in sorted(set(languages))}
    groups = {k: g for k, g in groups.items() if len(g) >= MIN_PER_LANGUAGE}
    if len(groups) < 2:
        return 0.0
    sums = {k: g.sum(axis=0).astype(np.float64) for k, g in groups.items()}
    # unit rows: |sum|^2 is every ordered pair's cosine plus the n self-pairs
    same = sum(float(sums[k] @ sums[k]) - len(g) for k, g in groups.items())
    same_pairs = sum(len(g) * (len(g) - 1) for g in groups.values())
    keys = sorted(groups)
    cross = sum(float(sums[a] @ sums[b]) for i, a in enumerate(keys) for b in keys[i + 1:])
    cross_pairs = sum(len(groups[a]) * len(groups[b]) for i, a in enumerate(keys) for b in keys[i + 1:])
    return max(0.0, same / same_pairs - cross / cross_pairs)


def key_terms(questions: list[str], common: frozenset[str] = frozenset()) -> list[str]:
    """Words that at least half of the questions (and at least two) use, most used first; none
    of the `common` ones (the site's own words: its name, its platforms)."""
    counts = Counter(t for q in questions for t in set(tokenize(q))
                     if t not in _GENERIC and t not in common and len(t) > 1)
    need = max(2, (len(questions) + 1) // 2) if len(questions) > 1 else 1
    kept = [t for t, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= need]
    # an identifier's parts ("effect", "kit" of "effectkit") say nothing the whole does not
    return [t for t in kept if not any(len(u) > len(t) and t in u and counts[u] >= counts[t] and u.isascii()
                                       for u in kept)][:12]


class Sections:
    """The index's sections (chunks) with their vectors: which are nearest a cluster, and their text."""

    def __init__(self, store):
        self.store = store
        self.rowids, self.matrix = store.vectors.matrix("chunk")
        self._nodes: dict[int, dict] = {}
        self._common: frozenset[str] | None = None

    def common_terms(self) -> frozenset[str]:
        """The words in more than COMMON_SHARE of the sections (read once: a few seconds on the
        demo's 7,000 sections)."""
        if self._common is None:
            rows = self.store.nodes.texts_of_type("chunk")
            df = Counter(t for _, crumb, text, _ in rows for t in set(tokenize(crumb + "\n" + text)))
            self._common = frozenset(t for t, n in df.items() if n > COMMON_SHARE * len(rows))
        return self._common

    def nearest(self, centroid: np.ndarray, k: int = NEAREST) -> list[dict]:
        if self.matrix.size == 0:
            return []
        cos = self.matrix.astype(np.float32) @ centroid.astype(np.float32)
        top = np.argsort(-cos, kind="stable")[:k]
        rows = [int(self.rowids[i]) for i in top]
        missing = [r for r in rows if r not in self._nodes]
        for node in self.store.nodes.by_rowids(missing):
            self._nodes[int(node["rowid"])] = node
        out = []
        for i, r in zip(top, rows):
            node = self._nodes.get(r)
            if node is not None:
                out.append({"id": node["id"], "section": node.get("breadcrumb") or "", "page": node.get("source_path"),
                            "url": node.get("source_url") or "", "cosine": round(float(cos[i]), 4),
                            "_text": node.get("text") or ""})
        return out


def _cluster_entry(rows: list[dict], vecs: np.ndarray, members: list[int], sections: Sections) -> dict:
    """One cluster: count, reasons, examples (most central first), nearest sections, what they
    lack. `vecs`: the questions' vectors as the embedder gives them (the sections' space)."""
    sub = vecs[members]
    centroid = sub.mean(axis=0)
    centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
    order = [members[i] for i in np.argsort(-(sub @ centroid), kind="stable")]
    picked = [rows[i] for i in order]
    questions = list(dict.fromkeys(r["question"] for r in picked))
    reasons = Counter(w for r in picked for w in r["_why"])
    near = sections.nearest(centroid)
    held = set(t for s in near for t in tokenize(s["section"] + "\n" + s["_text"]))
    terms = key_terms([r["question"] for r in picked], sections.common_terms())
    confs = [r["confidence"] for r in picked if r.get("confidence") is not None]
    return {"count": len(members), "distinct_questions": len(questions), "examples": questions[:EXAMPLES],
            "reasons": dict(sorted(reasons.items())),
            "languages": dict(Counter(r.get("language") or "?" for r in picked)),
            "mean_confidence": round(float(np.mean(confs)), 3) if confs else None,
            "comments": [c for r in picked for c in r.get("comments", [])][:EXAMPLES],
            "first_asked": min(r["asked_at"] for r in picked), "last_asked": max(r["asked_at"] for r in picked),
            "nearest_sections": [{k: v for k, v in s.items() if not k.startswith("_")} for s in near],
            "key_terms": terms, "lacking": [t for t in terms if t not in held],
            "answer_ids": [r["id"] for r in picked]}


def _clusters(rows: list[dict], vecs: np.ndarray, centre: np.ndarray, sections: Sections, threshold: float,
              offset: float, limit: int | None = None) -> list[dict]:
    """The clusters as report entries (only the `limit` largest, when given)."""
    groups = agglomerate(centred(vecs, centre), threshold, [r["_lang"] for r in rows], offset)[:limit]
    out = [_cluster_entry(rows, vecs, m, sections) for m in groups]
    return sorted(out, key=lambda c: (-c["count"], c["mean_confidence"] if c["mean_confidence"] is not None else 1.0,
                                      c["examples"][0]))


def gap_report(store, embedder, since: str = "", *, threshold: float = LINK_COSINE,
               translations: bool = True, topics: int = TOPICS, log=None) -> GapReport:
    """The report over the questions asked at or after `since` (ISO; '' for all). `log`: the Store
    holding the question log where it is not the index file (`log_db`, a read-only index's side file)."""
    rows = (log if log is not None else store).asked.asked_since(since)
    for r in rows:
        r["_why"] = why_failed(r)
    recent = rows[-MAX_QUESTIONS:]
    failed = [r for r in recent if r["_why"]]
    report = GapReport(since, getattr(embedder, "model_id", ""), len(rows),
                       sum(1 for r in rows if not r["_why"]), sum(1 for r in rows if r["_why"]), len(recent),
                       link_cosine=threshold)
    if recent:
        vecs = np.asarray(embedder.embed_queries([r["question"] for r in recent]), dtype=np.float32)
        at = {id(r): i for i, r in enumerate(recent)}
        sections, centre = Sections(store), centre_of(embedder)
        for r in recent:
            r["_lang"] = r.get("language") or language_of(r["question"])
        offset = language_offset(centred(vecs, centre), [r["_lang"] for r in recent])
        report.language_offset = round(offset, 4)
        clusters = _clusters(failed, vecs[[at[id(r)] for r in failed]] if failed else vecs[:0], centre, sections,
                             threshold, offset)
        for rank, c in enumerate(c for c in clusters if c["count"] >= MIN_GAP):
            report.gaps.append({"rank": rank + 1, **c})
        report.one_offs = [{"question": c["examples"][0], "reasons": c["reasons"], "answer_id": c["answer_ids"][0],
                            "nearest_section": (c["nearest_sections"] or [{}])[0].get("section", ""),
                            "asked_at": c["last_asked"]} for c in clusters if c["count"] < MIN_GAP]
        failed_ids = {r["id"] for r in failed}
        for c in _clusters(recent, vecs, centre, sections, threshold, offset, topics):
            failed_n = sum(c["reasons"].get(k, 0) for k in ("unanswered", "low_confidence"))
            report.topics.append({"count": c["count"], "examples": c["examples"][:3], "key_terms": c["key_terms"][:6],
                                  "failed": sum(1 for i in c["answer_ids"] if i in failed_ids),
                                  "unanswered": failed_n,
                                  "nearest_section": (c["nearest_sections"] or [{}])[0].get("section", "")})
    if translations:
        from ..answer.translations import translation_gaps

        found = translation_gaps(store)
        report.translations = found if found["trees"] and len(found["trees"]) > 1 else None
    return report

