"""Does the index answer this question? A confidence from the ranking's own evidence, calibrated
per index without labels.

Three pieces of evidence per question, over the sections (chunks):
- `dense`: the best cosine of the question to any section;
- `coverage`: the IDF weight of the question's words (the lexical index's tokens; a word the
  corpus never uses weighs the most) that one section holds, divided by the square root of the
  question's whole weight; the best of the top sections by cosine and by BM25. Divided by the
  whole weight (a share), a long question is judged by its incidental words: "got", "slow",
  "tried" are rare in a technical corpus, and a symptom told in 25 words held half by the section
  that answers it scored below "How do I center a div with CSS grid?" on Hugo's docs. Not divided
  at all, length alone would earn trust. The square root sits between the two, as a count's
  standard error grows with the root of what was counted;
- `unknown`: the identifiers and names the question uses (`kernels.tokens.named_terms`: `Flutter`,
  `FlatList`, `setState`, every Latin word of a Chinese question) that the corpus never contains.
A question from another domain ("how do I bake bread?") scores low on the first two. A question
about another framework ("Flutter 的 GetX 怎么做路由管理？") can score as high as a real one, its
words (routing, state, list) all in the docs; the name the docs never use is what gives it away.

How low is low depends on the corpus, the embedder and the language, so each index is calibrated
against a fixed packaged list of off-domain questions (`offdomain_questions.txt`, 50 English and
50 Chinese) per language group (a question with Han ideographs or not): their evidence gives a
mean and spread per feature, a question's score is the sum of its two z-scores, and the
threshold sits at the group's off-domain scores' 86th percentile. A question naming an unknown
identifier must clear it by `UNKNOWN_PENALTY` spreads of the off-domain scores more: a real
question naming its own component (`MyCard`) with strong evidence stays answerable. The
calibration is computed once per index version and model and kept in the file's meta
(`answerability_calibration`). Query-time cost, bounded by the question's length
(`max_query_chars`): one cosine and one BM25 row over the sections, the coverage of at most
2 x TOP of them, and a vocabulary look-up per named term.

Measured on the ArkUI-X structural index (docs/benchmarks.md "Answers"; reproduce with
`python -m bench.answers unanswerable --db ARKUI.db --split dev`, then `--split test`):
- dev (tuned on): bench/unanswerable/dev (60 en, 60 zh, off-topic and near-topic) flagged
  en 95.0 / zh 95.0; questions_v2 dev's answerable questions flagged 0 of 47, the eight doc
  sites' dev questions 0 of 153;
- test (seen before this rule): bench/unanswerable/{en,zh}.jsonl flagged en 98.0 / zh 98.0;
  questions_v2 test's answerable questions flagged 0 of 95, the eight sites' test questions 2 of
  310 (`--only-answerable --answerable bench/sites/SITE/questions.jsonl`).
"""
from __future__ import annotations

import hashlib
import json
import math
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..kernels.tokens import IDEOGRAPH, named_terms, tokenize
from .loaded import LoadedIndex

QUESTIONS = Path(__file__).with_name("offdomain_questions.txt")
META_KEY = "answerability_calibration"
TOP = 5  # sections by cosine and by BM25 whose coverage is read
DENSE_SD_FLOOR, COVERAGE_SD_FLOOR = 0.01, 0.05  # an off-domain spread never reads as exact
SCALE_FLOOR = 0.5
# Chosen on the dev sets alone (bench/unanswerable/dev, questions_v2's dev split and the eight doc
# sites' dev splits as answerable): from the 0.83 to the 0.89 quantile no answerable dev question
# is flagged and every unanswerable dev set is >= 95% flagged (ArkUI-X's en and zh, each site's
# off-topic half); 0.86 is that band's middle. At 0.93, the quantile before the GitBook site
# joined the dev sets, 3 of its 20 dev questions were flagged; below 0.83 Starlight's off-topic
# half falls to 92%. An unknown name costs 2 spreads (1.5 to 2.5 flag the same dev questions):
# a real question naming its own component (`MyCard`) with strong evidence stays answerable.
OFF_DOMAIN_QUANTILE = 0.86
UNKNOWN_PENALTY = 2.0
MIN_GROUP = 10  # off-domain questions a language group needs for its own calibration
RULE = "lang-q86-unknown2-sqrt"  # in the stored calibration's key: a calibration made by another rule is made again


@dataclass(frozen=True)
class Evidence:
    dense: float
    coverage: float
    unknown: tuple[str, ...] = ()  # named terms the corpus never contains
    han: bool = False              # the question holds Han ideographs: the Chinese group


@dataclass(frozen=True)
class Scale:
    """One language group's off-domain evidence on an index."""
    dense_mean: float
    dense_sd: float
    coverage_mean: float
    coverage_sd: float
    threshold: float  # score at and above which a question is answerable
    scale: float      # the off-domain scores' spread: how fast confidence rises past the threshold

    def score(self, dense: float, coverage: float) -> float:
        return (dense - self.dense_mean) / self.dense_sd + (coverage - self.coverage_mean) / self.coverage_sd


@dataclass(frozen=True)
class Calibration:
    latin: Scale  # questions without Han ideographs
    han: Scale

    def score(self, ev: Evidence) -> float:
        """The question's score on its group's scale, less the penalty of an unknown name."""
        g = self.han if ev.han else self.latin
        return g.score(ev.dense, ev.coverage) - (UNKNOWN_PENALTY * g.scale if ev.unknown else 0.0)

    def judge(self, ev: Evidence) -> tuple[bool, float]:
        """(answerable, confidence in 0..1; 0.5 at the threshold)."""
        g = self.han if ev.han else self.latin
        s = self.score(ev)
        z = max(-30.0, min(30.0, (s - g.threshold) / g.scale))
        return s >= g.threshold, round(1.0 / (1.0 + math.exp(-z)), 4)

    def to_json(self) -> dict:
        return {"latin": self.latin.__dict__, "han": self.han.__dict__}

    @classmethod
    def from_json(cls, data: dict) -> "Calibration":
        return cls(Scale(**data["latin"]), Scale(**data["han"]))


def off_domain_questions() -> list[str]:
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    return [q.strip() for q in lines if q.strip() and not q.startswith("#")]


def evidence(li: LoadedIndex, qv: np.ndarray, query: str) -> Evidence:
    """The question's evidence (see the module's docstring); zeros for an empty index."""
    han = IDEOGRAPH.search(query) is not None
    doc_idx, lex = li.lexical()
    if doc_idx.size == 0:
        return Evidence(0.0, 0.0, (), han)
    cos = li.cosine(np.asarray(qv, dtype=np.float32), doc_idx)
    unknown = tuple(t for t in named_terms(query) if t not in lex.vocab)
    return Evidence(float(cos.max()), coverage(lex, query, cos), unknown, han)


def coverage(lex, query: str, cos: np.ndarray, top: int = TOP) -> float:
    """The most IDF weight of the question's words held by one of the top sections (by cosine
    `cos` over the lexical documents, and by BM25), over the root of the question's whole weight."""
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
    return float((held @ idf).max() / math.sqrt(total))


def calibrate(li: LoadedIndex, embedder, questions: list[str] | None = None) -> Calibration:
    """The off-domain questions' evidence on this index, per language group: means, spreads and
    thresholds. A group with fewer than MIN_GROUP questions is calibrated on the whole list."""
    qs = questions or off_domain_questions()
    vectors = np.asarray(embedder.embed_queries(qs), dtype=np.float32)
    evs = [evidence(li, v, q) for q, v in zip(qs, vectors)]
    whole = np.array([(e.dense, e.coverage) for e in evs], dtype=np.float64)
    groups = {}
    for han in (False, True):
        ev = np.array([(e.dense, e.coverage) for e in evs if e.han == han], dtype=np.float64)
        groups[han] = _scale(ev if len(ev) >= MIN_GROUP else whole)
    return Calibration(latin=groups[False], han=groups[True])


def _scale(ev: np.ndarray) -> Scale:
    dm, ds = float(ev[:, 0].mean()), max(float(ev[:, 0].std()), DENSE_SD_FLOOR)
    cm, cs = float(ev[:, 1].mean()), max(float(ev[:, 1].std()), COVERAGE_SD_FLOOR)
    scores = (ev[:, 0] - dm) / ds + (ev[:, 1] - cm) / cs
    threshold = float(np.quantile(scores, OFF_DOMAIN_QUANTILE))
    return Scale(dm, ds, cm, cs, threshold, max(float(scores.std()), SCALE_FLOOR))


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
        return Calibration.from_json(data["calibration"]) if data.get("key") == key else None
    except (ValueError, TypeError, KeyError):
        return None


def _save(li: LoadedIndex, key: str, cal: Calibration) -> None:
    from ..store import Store

    value = json.dumps({"key": key, "calibration": cal.to_json()})
    try:
        with Store(li.path, timeout=0.5) as st:  # a cache: a busy or read-only file skips it
            st.write_meta_cache(META_KEY, value, int(li.meta.get("graph_version", 0)))
    except Exception:  # noqa: BLE001 - recomputed at the next start instead
        pass
