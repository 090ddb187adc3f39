"""Does the index answer this question? A confidence from the ranking's own evidence, calibrated
per index without labels.

Two pieces of evidence per question, both over the sections (chunks):
- `dense`: the best cosine of the question to any section;
- `coverage`: the share of the question's words (IDF-weighted, the lexical index's tokens; a word
  the corpus never uses weighs the most) that one section holds, the best of the top sections by
  cosine and by BM25.
A question from another domain ("how do I bake bread?", "Flutter's setState") scores low on
both. How low depends on the corpus and the embedder, so each index is calibrated against a
fixed packaged list of off-domain questions (`offdomain_questions.txt`): their evidence gives a
mean and spread per feature, a question's score is the sum of its two z-scores, and the
threshold sits at the off-domain scores' 92nd percentile. The calibration is computed once per
index version and model and kept in the file's meta (`answerability_calibration`).
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..kernels.tokens import tokenize
from .loaded import LoadedIndex

QUESTIONS = Path(__file__).with_name("offdomain_questions.txt")
META_KEY = "answerability_calibration"
TOP = 5  # sections by cosine and by BM25 whose coverage is read
DENSE_SD_FLOOR, COVERAGE_SD_FLOOR = 0.01, 0.05  # an off-domain spread never reads as exact
# the threshold: this quantile of the off-domain questions' scores on the index. Chosen by the
# ArkUI-X v2 dev split's answerable questions alone: the highest that flags at most 5% of them
# (the first rule, the 0.98 quantile plus half a spread, flagged 47%)
OFF_DOMAIN_QUANTILE = 0.92
RULE = "q92"  # in the stored calibration's key: a calibration made by another rule is made again


@dataclass(frozen=True)
class Calibration:
    dense_mean: float
    dense_sd: float
    coverage_mean: float
    coverage_sd: float
    threshold: float  # score at and above which a question is answerable
    scale: float      # the off-domain scores' spread: how fast confidence rises past the threshold

    def score(self, dense: float, coverage: float) -> float:
        return (dense - self.dense_mean) / self.dense_sd + (coverage - self.coverage_mean) / self.coverage_sd

    def judge(self, dense: float, coverage: float) -> tuple[bool, float]:
        """(answerable, confidence in 0..1; 0.5 at the threshold)."""
        s = self.score(dense, coverage)
        z = max(-30.0, min(30.0, (s - self.threshold) / self.scale))
        return s >= self.threshold, round(1.0 / (1.0 + math.exp(-z)), 4)


def off_domain_questions() -> list[str]:
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    return [q.strip() for q in lines if q.strip() and not q.startswith("#")]


def evidence(li: LoadedIndex, qv: np.ndarray, query: str) -> tuple[float, float]:
    """(dense, coverage) of one question (see the module's docstring); (0, 0) for an empty index."""
    doc_idx, lex = li.lexical()
    if doc_idx.size == 0:
        return 0.0, 0.0
    cos = li.cosine(np.asarray(qv, dtype=np.float32), doc_idx)
    return float(cos.max()), coverage(lex, query, cos)


def coverage(lex, query: str, cos: np.ndarray, top: int = TOP) -> float:
    """The best share of the question's IDF-weighted words held by one of the top sections (by
    cosine `cos` over the lexical documents, and by BM25)."""
    terms = list(dict.fromkeys(tokenize(query)))
    if not terms:
        return 0.0
    n = lex.n_docs
    df = np.diff(lex.weights.indptr)  # CSC: documents per term
    unseen = math.log1p((n + 0.5) / 0.5)
    known = [lex.vocab[t] for t in terms if t in lex.vocab]
    idf = np.log1p((n - df[known] + 0.5) / (df[known] + 0.5)) if known else np.zeros(0)
    total = float(idf.sum()) + unseen * (len(terms) - len(known))
    if not known or total <= 0:
        return 0.0
    k = min(top, n)
    docs = np.union1d(np.argpartition(-cos, k - 1)[:k], np.argpartition(-lex.scores(query), k - 1)[:k])
    held = lex.weights[docs][:, known].toarray() > 0
    return float((held @ idf).max() / total)


def calibrate(li: LoadedIndex, embedder, questions: list[str] | None = None) -> Calibration:
    """The off-domain questions' evidence on this index: its means, spreads and threshold."""
    qs = questions or off_domain_questions()
    vectors = np.asarray(embedder.embed_queries(qs), dtype=np.float32)
    ev = np.array([evidence(li, v, q) for q, v in zip(qs, vectors)], dtype=np.float64)
    dm, ds = float(ev[:, 0].mean()), max(float(ev[:, 0].std()), DENSE_SD_FLOOR)
    cm, cs = float(ev[:, 1].mean()), max(float(ev[:, 1].std()), COVERAGE_SD_FLOOR)
    scores = (ev[:, 0] - dm) / ds + (ev[:, 1] - cm) / cs
    threshold = float(np.quantile(scores, OFF_DOMAIN_QUANTILE))
    return Calibration(dm, ds, cm, cs, threshold, max(float(scores.std()), 0.5))


def fingerprint(li: LoadedIndex, model_id: str) -> str:
    """What a calibration is valid for: the graph version, the model and the question list."""
    listing = hashlib.sha256(QUESTIONS.read_bytes()).hexdigest()[:12]
    return f"{li.meta.get('graph_version', '0')}:{model_id}:{listing}:{RULE}"


class Calibrations:
    """One calibration per loaded snapshot: read from the file's meta when it matches, else
    computed (once, under a lock) and written back where the file is writable."""

    def __init__(self):
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, str], Calibration] = {}

    def get(self, li: LoadedIndex, embedder) -> Calibration:
        key = (str(li.path), fingerprint(li, embedder.model_id))
        found = self._by_key.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._by_key.get(key) or _stored(li.meta.get(META_KEY), key[1])
            if found is None:
                found = calibrate(li, embedder)
                _save(li, key[1], found)
            self._by_key[key] = found
            return found


def _stored(raw: str | None, key: str) -> Calibration | None:
    try:
        data = json.loads(raw or "{}")
        return Calibration(**data["calibration"]) if data.get("key") == key else None
    except (ValueError, TypeError, KeyError):
        return None


def _save(li: LoadedIndex, key: str, cal: Calibration) -> None:
    from ..store import Store

    value = json.dumps({"key": key, "calibration": cal.__dict__})
    try:
        with Store(li.path, timeout=0.5) as st:  # a cache: a busy or read-only file skips it
            st.write_meta_cache(META_KEY, value, int(li.meta.get("graph_version", 0)))
    except Exception:  # noqa: BLE001 - recomputed at the next start instead
        pass
