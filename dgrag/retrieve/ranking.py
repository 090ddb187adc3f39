"""The diffusion's chunk ranking: one score per candidate that weighs every kind of evidence.

Instead of switching the graph on or off per question, each candidate section gets features on
scales that mean the same on every question, and one linear score ranks them: the score is the
sum of each feature's contribution, its weight times its value (`contributions`), so the
inspector's "why" lists exactly what ranked a result. The features are named in `REGISTRY` (what
each measures and how it is computed); `features` writes each one's column by name (`COLUMN`).

With every weight but `base`'s at 0 the ranking is dense's, so every other feature moves a
passage only as far as its evidence carries it past dense's own margins. A weight of 0 leaves
the features that cost work (`lexical`, `bridge`, `child`, `evidence`, `language`, `ppr`, `prose`,
`release`, `xref`) uncomputed.

The default weights are fitted on the dev splits of the bench sets (`python -m bench.ranker`)
and kept with their provenance in dgrag/rank_weights.json; RetrievalConfig reads them
(`rank_w_*`), so a request can change them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import RetrievalConfig
from ..core import Route
from ..kernels.graph_arrays import EDGE_TYPE_CODES, NODE_TYPE_CODES, row_entries
from ..kernels.scaling import minmax
from . import cross_refs
from .loaded import LoadedIndex

# the base of a candidate stage 2 did not keep: below its last one, so that with the other
# weights at 0 the ranking is dense's to the end
OUTSIDE_BASE = -0.1
# the bridge credit of a passage naming n titles is divided by n ** BRIDGE_SHARE: by sqrt(n),
# chosen on the dev splits over sharing by n (exponent 1; bench.ranker's objective 1,207.5
# against 1,212.3) and not sharing (0) (docs/benchmarks.md, "The weighted chunk ranking")
BRIDGE_SHARE = 0.5
NO_SCORES = (np.zeros(0, np.int64), np.zeros(0))  # a source left out: (graph indices, scores)


@dataclass(frozen=True)
class Feature:
    """One column of the ranking's feature matrix; its weight is RetrievalConfig's `rank_w_<name>`."""
    name: str
    measures: str  # what it tells about a candidate
    computed: str  # how `features` computes it


REGISTRY = (
    Feature("base", "how well stage 2 matched the question",
            "the stage-2 score (dense cosine fused with BM25 over the dense candidates), min-max over them; "
            "OUTSIDE_BASE for a candidate stage 2 did not keep"),
    Feature("dense", "the margin dense was sure by",
            "the candidate's cosine minus the best candidate's"),
    Feature("lexical", "the question's words and identifiers anywhere in the section",
            "identifier-aware BM25 over the whole corpus, the section's full text included (its prose past "
            "the embedder's cut, its code and tables), over the question's best score"),
    Feature("page", "the section's page matches (page -> section)",
            "its page's cosine minus the best candidate page's"),
    Feature("diffusion", "the cost-aware diffusion reached it cheaply",
            "the diffusion's own score, over its best"),
    Feature("ppr", "the fact-seeded PPR walk (HippoRAG 2's graph signal) reached it",
            "the PPR score over the graph less its tree's `contains` edges (`rank_ppr_tree`), over its "
            "best; 0 without seeds"),
    Feature("evidence", "facts and entities the question names point at it",
            "a matched fact's credit (its rerank score, min-max) to the chunk it was read from and a share "
            "through each of its entities, and each entity the question names, an entity's credit divided "
            "among the passages that mention it, so hubs (`ArkUI-X`, `build()`) count for little; over "
            "the best (methods.fact_evidence)"),
    Feature("link", "a jump link joins its page to a top passage's (a guide and the API it calls)",
            "the best base score among the `rank_link_k` best passages whose page links to or from its page, "
            "over log2(1 + the pages that page is joined to), so an overview linking every guide gains little"),
    Feature("child", "text past the section's embedded cut that has a vector of its own",
            "the best cosine among the section and its code blocks, tables and images, minus the best "
            "candidate's"),
    Feature("bridge", "a top passage on another page names it (the next hop)",
            "the base score of one of the `rank_bridge_k` best passages that mentions its page name or "
            "heading (with the question's words, `rank_bridge_question`), times the title's specificity, "
            "shared by n ** BRIDGE_SHARE of the n titles that passage names; never the first place (`order`)"),
    Feature("language", "the section is in the question's language (a bilingual corpus holds each page twice)",
            "1 where the section's language is the question's (`core.language_of`), else 0"),
    Feature("prose", "the section has text of its own: not a heading alone, not a list of links (either "
            "matches by its words and answers nothing; its sub-sections and the pages it links to are "
            "candidates themselves)",
            "the share of the section's own lines that are not link lines, minus 1 (`shape.prose_share`): "
            "0 for prose, so that a corpus of prose ranks and scores as without it; -1 for a heading alone"),
    Feature("release", "the section is release notes and the question asks about no version or change "
            "(a changelog names every feature once per release: its sections match any question by their words)",
            "-1 for a section of a page of release notes (`shape.release_sections`: several version headings, "
            "most sections under one) when the question names no version and no release word "
            "(`shape.asks_about_releases`), else 0"),
    Feature("xref", "a top passage names the API this section defines, or links to its anchor (a guide "
            "and the reference section it calls)",
            "the best base score among the `rank_link_k` best passages joined to it by an API edge or an "
            "anchored jump link, over log2(1 + its such edges) (`cross_refs.evidence`)"),
)
FEATURES = tuple(f.name for f in REGISTRY)  # the columns, in order
COLUMN = {name: i for i, name in enumerate(FEATURES)}


def weights_of(cfg: RetrievalConfig) -> np.ndarray:
    return np.array([getattr(cfg, f"rank_w_{f}") for f in FEATURES], dtype=np.float64)


def _unit(x: np.ndarray) -> np.ndarray:
    top = float(x.max()) if x.size else 0.0
    return x / top if top > 0 else np.zeros_like(x)


def candidates(li: LoadedIndex, cfg: RetrievalConfig, chunks: Route, lexical: tuple[np.ndarray, np.ndarray],
               walk: dict[int, float], ppr: dict[int, float], dense: np.ndarray,
               bridge: tuple[np.ndarray, np.ndarray] = NO_SCORES) -> np.ndarray:
    """Graph indices of the sections to rank: the stage-2 chunks, the best lexical and bridge
    matches, the best of the walk and of PPR, and the best section of each page linked to the
    best base passages."""
    k = cfg.rank_candidate_k
    parts = [chunks.positions[:k]]
    for rows, values in (lexical, bridge):
        if values.size and values.max() > 0:
            parts.append(rows[np.argsort(-values, kind="stable")[:k]])
    for scores in (walk, ppr):
        parts.append(np.array(sorted(scores, key=lambda n: -scores[n])[:k], dtype=np.int64))
    parts.append(_best_on_linked_pages(li, chunks.positions[:cfg.rank_link_k], dense))
    if cfg.rank_w_xref > 0:
        parts.append(cross_refs.reached(li, chunks.positions[:cfg.rank_link_k]))
    return np.array(list(dict.fromkeys(np.concatenate(parts).tolist())), dtype=np.int64)


def features(li: LoadedIndex, cfg: RetrievalConfig, cands: np.ndarray, chunks: Route, lexical,
             walk: dict[int, float], ppr: dict[int, float], evidence: np.ndarray | None,
             dense: np.ndarray, bridge: tuple[np.ndarray, np.ndarray] = NO_SCORES,
             language: str = "", releases_asked: bool = False) -> np.ndarray:
    """(len(cands), len(FEATURES)) on the scales above; `language` is the question's ('' to
    leave that feature at 0); `releases_asked`: the question is about versions (`release` stays 0)."""
    n = cands.size
    F = np.zeros((n, len(FEATURES)))
    at = {int(c): i for i, c in enumerate(cands.tolist())}
    base = minmax(np.asarray(chunks.score, dtype=np.float64))
    F[:, COLUMN["base"]] = OUTSIDE_BASE
    for p, s in zip(chunks.positions.tolist(), base.tolist()):
        if p in at:
            F[at[p], COLUMN["base"]] = s
    cos = dense[cands]
    F[:, COLUMN["dense"]] = cos - cos.max() if n else 0.0
    for name, (rows, values) in (("lexical", lexical), ("bridge", bridge)):
        if values.size:
            full = np.zeros(li.n_nodes)
            full[rows] = _unit(values) if name == "lexical" else values
            F[:, COLUMN[name]] = full[cands]
    page = li.page_of()
    pages = page[cands]
    pcos = np.where(pages >= 0, dense[np.maximum(pages, 0)], 0.0)
    F[:, COLUMN["page"]] = pcos - pcos.max() if n else 0.0
    for name, scores in (("diffusion", walk), ("ppr", ppr)):
        top = max(scores.values(), default=0.0)
        if top > 0:
            F[:, COLUMN[name]] = [scores.get(int(c), 0.0) / top for c in cands.tolist()]
    if evidence is not None:
        F[:, COLUMN["evidence"]] = evidence[cands]
    F[:, COLUMN["link"]] = _link_evidence(li, chunks, cfg.rank_link_k, pages, base)
    if cfg.rank_w_child > 0 and n:
        child = _best_with_children(li, cands, dense)
        F[:, COLUMN["child"]] = child - child.max()
    if language:
        F[:, COLUMN["language"]] = li.language()[cands] == language
    if cfg.rank_w_prose > 0:
        F[:, COLUMN["prose"]] = li.prose()[cands] - 1.0
    if cfg.rank_w_release > 0 and not releases_asked:
        F[:, COLUMN["release"]] = -li.release()[cands].astype(np.float64)
    if cfg.rank_w_xref > 0:
        k = cfg.rank_link_k
        F[:, COLUMN["xref"]] = cross_refs.evidence(li, chunks.positions[:k], base[:k], cands)
    return F


def bridge_scores(li: LoadedIndex, chunks: Route, top: int,
                  question: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per lexical document (graph indices, scores): the best base score among the first `top`
    passages that mention its page name or heading from another page, times the title's
    specificity, over n ** BRIDGE_SHARE for the n documents that passage's mentions reach.
    With `question` (its lexical term ids), a title may take some of its terms from the
    question, as long as one comes from the passage ("British Hong Kong": "British" asked,
    "Hong Kong" where the film was made)."""
    rows, _ = li.lexical()
    page = li.page_of()
    base = minmax(np.asarray(chunks.score, dtype=np.float64))
    out = np.zeros(rows.size)
    doc_page = page[rows]
    for p, s in zip(chunks.positions[:top].tolist(), base[:top].tolist()):
        at = np.flatnonzero(rows == p)
        if at.size and s > 0:
            _bridge_from(li, doc_page, int(at[0]), s, question, out)
    return rows, out


def _bridge_from(li: LoadedIndex, doc_page: np.ndarray, doc: int, s: float, question: np.ndarray | None,
                 out: np.ndarray) -> None:
    """The credit lexical document `doc` (base score `s`) lends the titles it names;
    `doc_page` is each lexical document's page."""
    pages, headings = li.titles()  # one vocabulary and one term matrix: `need` serves both
    need = None
    if question is not None and question.size:
        need = np.zeros(pages.titles.shape[1], dtype=bool)
        need[pages.terms_of(doc)] = True
    for titles in (pages, headings):
        hit = titles.mentioned_by(doc, also=question, need=need)
        hit = hit[doc_page[hit] != doc_page[doc]]
        # a passage's credit is shared by the titles it names, as PPR shares an entity's
        # by its passages: a reference page naming 40 sections lends each little
        share = max(1, hit.size) ** BRIDGE_SHARE
        np.maximum.at(out, hit, s * titles.specificity[hit] / share)


def contributions(F: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each feature's share of each candidate's score: weight times value, (candidates, features)."""
    return F * w


def scores(F: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The ranking score of each candidate: the sum of its contributions, summed row by row as
    `explained` lists them, so that the two agree to the last bit."""
    return contributions(F, w).sum(axis=1)


def order(F: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Candidate positions best first by `scores`, except the first place: it goes to the best by
    every feature but `bridge`. A bridge is next-hop evidence (the passage a first passage
    names), so it ranks a passage after the passages that match the question themselves, not
    above all of them. Ties keep the candidates' order (stage 2's first, in its order)."""
    s = scores(F, w)
    out = np.argsort(-s, kind="stable")
    b = COLUMN["bridge"]
    if out.size > 1 and w[b] != 0:
        first = int(np.argmax(s - w[b] * F[:, b]))  # argmax keeps the earliest of ties
        out = np.concatenate([[first], out[out != first]])
    return out


def rank(cands: np.ndarray, F: np.ndarray, w: np.ndarray) -> list[tuple[int, float]]:
    """Best first (`order`), with each candidate's score (`scores`)."""
    s = scores(F, w)
    return [(int(cands[i]), float(s[i])) for i in order(F, w)]


def explained(F: np.ndarray, w: np.ndarray, i: int) -> list[dict]:
    """What ranked candidate `i`: each feature with a non-zero contribution, its weight, value
    and contribution, the largest (in size) first. Their contributions sum to its score."""
    c = contributions(F[i:i + 1], w)[0]
    rows = [{"feature": name, "weight": float(w[j]), "value": float(F[i, j]), "contribution": float(c[j])}
            for j, name in enumerate(FEATURES) if c[j] != 0]
    return sorted(rows, key=lambda r: -abs(r["contribution"]))


def interleave(ranked: list[tuple[int, float]], other: list[int], head: int, every: int) -> list[tuple[int, float]]:
    """`ranked` (the weighted ranking, best first) with places given to `other` (PPR's
    passages, best first): the first `head` places stay `ranked`'s; after them every
    `every`-th place goes to the best of `other` not yet placed, if it is a candidate
    (keeping its own score). Nothing is dropped: what those places push down follows."""
    score = dict(ranked)
    other = [n for n in other if n in score]
    out = [n for n, _ in ranked[:head]]
    placed = set(out)
    mine, theirs = iter(n for n, _ in ranked[head:]), iter(other)
    while len(out) < len(ranked):
        source = theirs if every > 0 and (len(out) - head) % every == every - 1 else mine
        nxt = next((n for n in source if n not in placed), None)
        if nxt is None:
            if source is theirs:  # nothing new there: the weighted ranking goes on
                every = 0
                continue
            break
        out.append(nxt)
        placed.add(nxt)
    out += [n for n, _ in ranked if n not in placed]
    return [(n, score[n]) for n in out]


def _linked_pages(li: LoadedIndex, node: int, page: np.ndarray) -> set[int]:
    """Pages joined to `node`'s page by a jump link, either way (the node's own links, and the
    chunks of other pages that link to its page)."""
    ga, jump = li.ga, EDGE_TYPE_CODES["jump"]
    out: set[int] = set()
    for v in (node, int(page[node])):
        if v < 0:
            continue
        lo, hi = ga.indptr[v], ga.indptr[v + 1]
        nbr = ga.indices[lo:hi][ga.etype[lo:hi] == jump]
        out.update(int(page[u]) for u in nbr.tolist())
    out.discard(int(page[node]))
    out.discard(-1)
    return out


def _link_evidence(li: LoadedIndex, chunks: Route, top: int, pages: np.ndarray, base: np.ndarray) -> np.ndarray:
    page = li.page_of()
    credit: dict[int, float] = {}
    for p, s in zip(chunks.positions[:top].tolist(), base[:top].tolist()):
        for q in _linked_pages(li, p, page):
            credit[q] = max(credit.get(q, 0.0), s)
    # hub control: a page joined to many pages is reached from any of them
    hub = {q: np.log2(1.0 + max(1, len(_linked_pages(li, q, page)))) for q in credit}
    return np.array([credit.get(int(q), 0.0) / hub.get(int(q), 1.0) for q in pages.tolist()])


def _best_with_children(li: LoadedIndex, cands: np.ndarray, dense: np.ndarray) -> np.ndarray:
    """Per candidate, the best cosine of itself and its code / table / image children."""
    ga = li.ga
    out = dense[cands].astype(np.float64)
    owner, entry = row_entries(ga.indptr, cands)
    nbr = ga.indices[entry]
    media = np.zeros(max(NODE_TYPE_CODES.values()) + 1, dtype=bool)
    media[[NODE_TYPE_CODES[k] for k in ("code", "table", "image")]] = True
    kid = (ga.etype[entry] == EDGE_TYPE_CODES["contains"]) & media[ga.node_type[nbr]]
    np.maximum.at(out, owner[kid], dense[nbr[kid]])
    return out


def _best_on_linked_pages(li: LoadedIndex, top: np.ndarray, dense: np.ndarray) -> np.ndarray:
    """The best section (by cosine) of each page linked to one of `top`: the API reference a
    guide calls may share no words with the question."""
    page = li.page_of()
    linked: set[int] = set()
    for p in top.tolist():
        linked |= _linked_pages(li, p, page)
    if not linked:
        return np.zeros(0, np.int64)
    rows = li.type_rows("chunk")
    on = rows[np.isin(page[rows], np.fromiter(linked, np.int64))]
    if on.size == 0:
        return on
    best: dict[int, int] = {}
    for r in on[np.argsort(-dense[on], kind="stable")].tolist():
        best.setdefault(int(page[r]), r)
    return np.array(sorted(best.values()), dtype=np.int64)
