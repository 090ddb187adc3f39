"""Stage 3, three ways: cost-aware diffusion (default), HippoRAG-2 PPR, and dense only.

Each takes the stage-2 routes and returns, per collectable node type, graph indices with
scores (best first), plus a trace of what it did.
"""
from __future__ import annotations

import numpy as np

from ..config import RetrievalConfig
from ..core import Route, Stage3Result, language_of
from ..kernels.diffusion import diffuse, path_to
from ..kernels.graph_arrays import EDGE_TYPE_CODES, NODE_TYPE_CODES, row_entries
from ..kernels.ppr import ppr_igraph, ppr_scipy
from ..kernels.ppr_push import ppr_push
from ..kernels.scaling import minmax
from .explain import PICTURE_NODES, picture_trace, seed_reasons
from . import ranking
from .loaded import LoadedIndex, QueryCosines
from .shape import asks_about_releases
from .stages import on_cosine_scale

COLLECT = ("chunk", "code", "table", "image")
# `ppr` stays for comparison with HippoRAG 2, not as a choice beside the default: on the doc
# sites its fallback to dense does not catch it (docs/benchmarks.md, "ppr on documentation")
# a matched fact's credit: all of it to the chunk it was read from, this share to each of its
# two entities (and from them, shared, to every chunk that mentions them)
ENTITY_SHARE = 0.5
CITED_K = 30  # the first results of each kind whose walk path is kept (graph_path_rowids, the picture)
# the method `ppr` gives dense's passages where at most this share of the walk's best pages agree
# with dense's (`dense_agreement`): the floor of the trust rule this replaced, where offline
# facts' hubs put the walk's best pages (docs/benchmarks.md, "When the graph is trusted")
PPR_FALLBACK_AGREEMENT = 1 / 3
# stage 4's cross-encoder reorders a type's best FINAL_POOL_FACTOR x its quota, at least
# FINAL_POOL_MIN (room below a quota of 2 for a result to rise into it); PPR keeps as many
# candidates per type, so that the pool is full under either method
FINAL_POOL_FACTOR = 3
FINAL_POOL_MIN = 20
PPR_NOTE = ("ppr (HippoRAG 2's walk) is an experimental comparison, not a method beside the default: on "
            "documentation it ranks below dense (docs/benchmarks.md, \"ppr on documentation\"); "
            "diffusion (the default) or dense answer better")


def node_similarity(cos: QueryCosines, chunks: Route) -> np.ndarray:
    """sim(node, q) for every node as the diffusion reads it: the clipped cosine where known
    (NaN where not: the diffusion computes those it reaches), with the reranked chunks on
    the cosine scale."""
    sim = cos.lazy()
    if chunks.positions.size:
        sim[chunks.positions] = on_cosine_scale(chunks)
    return sim


def fact_evidence(li: LoadedIndex, facts: Route, exact: list[int]) -> np.ndarray:
    """Graph evidence per node: the reranked facts point at their source chunk and, through
    their entities, at every chunk mentioning those entities (shared by 1/degree, so a
    specific entity counts more than a ubiquitous one). Normalised to [0, 1]."""
    nodes, weights = [], []  # (node, credit) pairs, summed per node below
    if facts.positions.size:
        s = minmax(facts.score)
        nodes.append(li.fact_chunk[facts.positions])
        weights.append(s)
        ents = np.concatenate([li.fact_head[facts.positions], li.fact_tail[facts.positions]])
        _spread_from_entities(li, nodes, weights, ents, np.concatenate([s, s]) * ENTITY_SHARE)
    if exact:
        _spread_from_entities(li, nodes, weights, np.asarray(exact), np.ones(len(exact)))
    ev = np.zeros(li.n_nodes)
    if not nodes:
        return ev
    # summed over the nodes reached only: passes over every node cost ~2 ms a question at 500k
    at, where = np.unique(np.concatenate(nodes).astype(np.int64), return_inverse=True)
    total = np.bincount(where, weights=np.concatenate(weights), minlength=at.size)
    keep = (at >= 0) & (li.node_type[np.maximum(at, 0)] == NODE_TYPE_CODES["chunk"])
    at, total = at[keep], total[keep]
    top = float(total.max()) if total.size else 0.0
    ev[at] = total / top if top > 0 else total
    return ev


def _spread_from_entities(li: LoadedIndex, nodes: list, weights: list, ents: np.ndarray,
                          credit: np.ndarray) -> None:
    """Each entity's credit shared by the passages it has an edge to (all entities at once),
    appended to `nodes` / `weights`."""
    ga = li.ga
    keep = ents >= 0
    ents, credit = ents[keep].astype(np.int64), np.asarray(credit, dtype=np.float64)[keep]
    owner, entry = row_entries(ga.indptr, ents)
    on = ga.etype[entry] == EDGE_TYPE_CODES["passage"]
    owner, nbr = owner[on], ga.indices[entry[on]]
    per = np.bincount(owner, minlength=ents.size)  # passages per entity
    nodes.append(nbr)
    weights.append(credit[owner] / per[owner])


def seeds_for(li: LoadedIndex, cfg: RetrievalConfig, facts: Route, files: Route, exact: list[int]) -> dict[int, float]:
    seeds: dict[int, float] = {}
    top = facts.positions[:cfg.fact_seed_k]
    for e in np.concatenate([li.fact_head[top], li.fact_tail[top]]).tolist() + list(exact):
        if e >= 0:
            seeds[e] = max(seeds.get(e, 0.0), cfg.fact_init_weight)
    for f in files.positions[:cfg.file_seed_k].tolist():
        seeds[f] = max(seeds.get(f, 0.0), cfg.file_init_weight)
    return seeds


def run_diffusion(li, cfg: RetrievalConfig, qv, routes: dict[str, Route], exact: list[int],
                  query: str = "", cos: QueryCosines | None = None) -> Stage3Result:
    """`cos`: the question's cosines as stage 1 left them (computed here as needed if None)."""
    facts, files, chunks = routes["fact"], routes["file"], routes["chunk"]
    dense = QueryCosines(li, qv) if cos is None else cos  # shared with the walk and the ranking
    if li.vec_mat.shape[0] < cfg.diffusion_lazy_cosine_min_vectors:
        dense.compute_all()
    sim = node_similarity(dense, chunks)
    seeds = seeds_for(li, cfg, facts, files, exact)
    mandatory = list(dict.fromkeys(li.fact_chunk[facts.positions[:cfg.fact_seed_k]].tolist() + chunks.positions.tolist()))
    mandatory = [m for m in mandatory if m >= 0]
    for m in mandatory:  # mandatory chunks also spread to their code / tables / images
        seeds[m] = max(seeds.get(m, 0.0), cfg.chunk_init_weight)
    quotas = {NODE_TYPE_CODES["chunk"]: cfg.diffusion_chunk_k, NODE_TYPE_CODES["code"]: cfg.diffusion_code_k,
              NODE_TYPE_CODES["table"]: cfg.diffusion_table_k, NODE_TYPE_CODES["image"]: cfg.diffusion_image_k}
    # a type the index does not hold can never fill its quota: leave it out so "candidates
    # full" can stop the search (same result, far fewer expansions on e.g. a passage corpus)
    quotas = {t: q for t, q in quotas.items() if li.nodes_of_type(t).size > 0}
    graph, agreement = [], 0.0
    if (facts.positions.size or exact) and cfg.rank_w_ppr > 0:
        graph = run_ppr(li, cfg, qv, routes, exact, dense, fallback=False,
                        tree=cfg.rank_ppr_tree).ranked["chunk"][:cfg.diffusion_chunk_k]
        # it decides whether PPR gets places in the ranking's tail (`_weighted_chunks`)
        agreement = dense_agreement(li.page_of(), cfg, chunks.positions, graph)
    ev = fact_evidence(li, facts, exact) if cfg.rank_w_evidence > 0 else None  # the ranking weighs it
    res = diffuse(li.ga, sim, seeds, mandatory, quotas=quotas, max_expansions=cfg.diffusion_max_expansions,
                  per_node_neighbor_limit=cfg.diffusion_per_node_neighbor_limit,
                  max_frontier_size=cfg.diffusion_max_frontier_size, min_enqueue_score=cfg.diffusion_min_enqueue_score,
                  time_budget_s=cfg.diffusion_time_budget_s, engine=cfg.diffusion_engine, vectors=dense.vectors())
    ranked = _by_type(li, res.nodes, res.scores)
    ranked["chunk"], extra, why = _weighted_chunks(li, cfg, query, chunks, ranked["chunk"], graph, ev, dense, agreement)
    cited = {n for kind in COLLECT for n, _ in ranked[kind][:CITED_K]}  # every item stage 4 may keep cites its path
    paths = {n: path_to(res, n) for n in sorted(cited)}
    trace = {"expansions": res.expansions, "stop_reason": res.stop_reason, "dense_agreement": round(agreement, 4)}
    if cfg.verbose:  # the inspector's picture; ~800 lookups a question otherwise thrown away
        trace.update(extra)
        trace.update(seeds=sorted(seeds.items(), key=lambda kv: -kv[1])[:60], mandatory=mandatory[:60],
                     visited=res.visited[:PICTURE_NODES].tolist(),
                     edges=[(int(res.parent[v]), int(v)) for v in res.visited[:PICTURE_NODES].tolist()
                            if res.parent.get(v, -1) >= 0])
        reasons = seed_reasons(li, facts, files, chunks, exact, cfg.fact_seed_k, cfg.file_seed_k)
        drawn = np.array(res.visited[:PICTURE_NODES].tolist() + [n for p in paths.values() for n in p], np.int64)
        trace.update(picture_trace(li, res, _known(sim, dense, drawn), paths, reasons))
    return Stage3Result(ranked, paths, trace, why)


def _known(sim: np.ndarray, cos: QueryCosines, nodes: np.ndarray) -> np.ndarray:
    """`sim` with the similarities of `nodes` filled in where the diffusion left them NaN."""
    todo = nodes[np.isnan(sim[nodes])]
    if todo.size:
        sim = sim.copy()
        sim[todo] = cos[todo]
    return sim


def _weighted_chunks(li, cfg: RetrievalConfig, query: str, chunks: Route, walked, graph, ev, dense,
                     agreement: float):
    """The chunk ranking (ranking.py), its features for the trace and, when verbose, what ranked
    each of its first chunks (`_why`). Where dense agrees with the fact-seeded PPR walk
    (`agreement`, `dense_agreement`, at least `rank_ppr_agreement`), in a passage corpus
    (`rank_ppr_in`), it also gets places in the tail (`ranking.interleave`): it finds the later
    hops (R@10) that one linear score ranks too low, and the head stays the weighted ranking's."""
    if cfg.rank_w_lexical > 0 and query:  # a weight of 0 costs nothing: no index built, no candidates
        lex_rows, index = li.lexical()
        lexical = (lex_rows, index.scores(query))
    else:
        lexical = (np.zeros(0, np.int64), np.zeros(0))
    bridge = ranking.NO_SCORES
    if cfg.rank_w_bridge > 0:
        asked = li.lexical()[1].term_ids(query) if cfg.rank_bridge_question and query else None
        bridge = ranking.bridge_scores(li, chunks, cfg.rank_bridge_k, asked)
    walk, ppr = dict(walked), dict(graph)
    cands = ranking.candidates(li, cfg, chunks, lexical, walk, ppr, dense, bridge)
    language = language_of(query) if cfg.rank_w_language > 0 and query else ""
    asked = cfg.rank_w_release > 0 and asks_about_releases(query or "")
    F = ranking.features(li, cfg, cands, chunks, lexical, walk, ppr, ev, dense, bridge, language, asked)
    w = ranking.weights_of(cfg)
    by_score = ranked = ranking.rank(cands, F, w)
    by_ppr = [n for n, _ in graph[:cfg.rank_candidate_k]]  # every one a candidate (`ranking.candidates`)
    eligible = cfg.rank_ppr_in == "any" or li.passage_pages()
    places = cfg.rank_ppr_every > 0 and eligible and bool(by_ppr) and agreement >= cfg.rank_ppr_agreement
    if places:
        ranked = ranking.interleave(ranked, by_ppr, cfg.rank_ppr_head, cfg.rank_ppr_every)
    at = {int(c): i for i, c in enumerate(cands.tolist())}
    why = _why(at, F, w, by_score, ranked, max(cfg.final_chunk_k, cfg.final_rerank_candidates)) if cfg.verbose else None
    return ranked, {"ranking": {"features": list(ranking.FEATURES), "weights": w.tolist(), "nodes": cands.tolist(),
                                "values": np.round(F, 5).tolist(), "ppr_agreement": round(agreement, 4),
                                "ppr_order": [at[n] for n in by_ppr], "ppr_places": places,
                                "passage_pages": li.passage_pages()}}, why


def _why(at: dict[int, int], F: np.ndarray, w: np.ndarray, by_score: list[tuple[int, float]],
         ranked: list[tuple[int, float]], top: int) -> dict[int, dict]:
    """Per graph index of the first `top` ranked chunks (`at`: its row in `F`): its score, the
    features that made it (`ranking.explained`: they sum to the score) and what gave it its
    place: `score`; `first_without_bridge` for a first place the bridge's next hop would have
    taken (`ranking.order`); `ppr` where PPR's places (`ranking.interleave`) put it above a
    result its score ranks above it."""
    was = [dict((n, i) for i, (n, _) in enumerate(by_score))[n] for n, _ in ranked]
    below = np.minimum.accumulate(np.array(was[::-1] + [len(was)]))[::-1][1:]  # the best rank after each
    best = max((s for _, s in by_score), default=0.0)

    def placed(place: int, s: float) -> str:
        if below[place] < was[place]:
            return "ppr"
        return "first_without_bridge" if was[place] == 0 and s < best else "score"

    return {n: {"score": s, "placed_by": placed(place, s), "contributions": ranking.explained(F, w, at[n])}
            for place, (n, s) in enumerate(ranked[:top])}


def dense_agreement(page: np.ndarray, cfg: RetrievalConfig, dense_ids: np.ndarray,
                    graph: list[tuple[int, float]]) -> float:
    """How far dense recall agrees with the graph's own answer, in [0, 1]: of the pages holding
    the walk's best `diffusion_trust_k` passages (`graph`, best first), the share that also
    hold one of dense's best `diffusion_trust_dense_k` (`dense_ids`, the stage-2 chunks best
    first; `page` maps a node to its page, LoadedIndex.page_of). Measured (docs/benchmarks.md,
    "When the graph is trusted"): where extraction is good, the walk's best pages include the
    ones dense finds first (the first hop) and it adds the rest (the next hops); where offline
    facts join unrelated pages through common mentions, its best pages are hubs that dense never
    ranks, and the dense ranking should stand. PPR gets places in the ranking from
    `rank_ppr_agreement` (half), the method `ppr` falls back at PPR_FALLBACK_AGREEMENT (a third)."""
    top = np.fromiter((n for n, _ in graph[:cfg.diffusion_trust_k]), np.int64)
    walk = set(page[top].tolist())
    if not walk:
        return 0.0
    dense = set(page[dense_ids[:cfg.diffusion_trust_dense_k]].tolist())
    return len(walk & dense) / len(walk)


def run_ppr(li, cfg: RetrievalConfig, qv, routes: dict[str, Route], exact: list[int],
            dense: QueryCosines | None = None, fallback: bool = True, tree: bool = True) -> Stage3Result:
    """HippoRAG 2: entity seeds from the top facts, passages at `ppr_passage_weight` of their dense score.
    `dense` is the question's cosines, when the caller has them already; `fallback`
    (the method `ppr`, not the diffusion's graph feature) gives dense's passages when the
    seeds are of no use; `tree` False walks the graph without its `contains` edges
    (`LoadedIndex.walked`: the ranking's `ppr` feature)."""
    facts = routes["fact"]
    reset = np.zeros(li.n_nodes)
    top = facts.positions[:cfg.fact_seed_k]
    if top.size:
        s = facts.score[:cfg.fact_seed_k]
        s = minmax(s)
        for ents in (li.fact_head[top], li.fact_tail[top]):
            for e, w in zip(ents.tolist(), s.tolist()):
                if e >= 0:
                    reset[e] = max(reset[e], w / max(1, _passage_degree(li, e)))
    for e in exact:
        reset[e] = max(reset[e], 1.0 / max(1, _passage_degree(li, e)))
    entity_seeded = bool(reset.any())
    if dense is None:
        dense = QueryCosines(li, qv)
    rows, d = dense.of_type("chunk")
    if rows.size:
        d = np.maximum(d, 0.0)
        d = minmax(d)
        k = cfg.ppr_passage_top_k
        if 0 < k < rows.size:
            # restart mass on the best k passages only (same values, the tail left at 0): a
            # cheaper walk, since a restart on every passage makes the push visit the whole
            # graph; off by default, as it changes which pages the agreement rule sees (docs/benchmarks.md,
            # "Stage 3 at scale")
            keep = np.argpartition(-d, k - 1)[:k]
            rows, d = rows[keep], d[keep]
        reset[rows] += d * cfg.ppr_passage_weight
    if cfg.ppr_engine == "push":
        g = li.walked(tree)
        scores = ppr_push(g.indptr, g.indices, g.weight, li.weighted_degree(tree), reset,
                          damping=cfg.ppr_damping, eps=cfg.ppr_push_eps)
    elif cfg.ppr_engine == "igraph":
        scores = ppr_igraph(li.igraph(tree), reset, damping=cfg.ppr_damping)
    else:
        scores = ppr_scipy(li.adjacency(tree), reset, damping=cfg.ppr_damping)
    spread = {"chunk": cfg.diffusion_chunk_k, "code": cfg.diffusion_code_k, "table": cfg.diffusion_table_k,
              "image": cfg.diffusion_image_k}
    final = {"chunk": cfg.final_chunk_k, "code": cfg.final_code_k, "table": cfg.final_table_k,
             "image": cfg.final_image_k}
    caps = {kind: max(spread[kind], FINAL_POOL_FACTOR * final[kind], FINAL_POOL_MIN, cfg.final_rerank_candidates)
            for kind in COLLECT}
    ranked = _top_by_type(li, scores, caps)
    dense_ids = routes["chunk"].positions
    # HippoRAG 2's guard: with no fact or entity to start from, the walk only smears the dense
    # scores over the tree, so passages keep the dense ranking (code, tables and images still
    # come from the walk, which reaches them from those passages). Offline there is no LLM to
    # filter the facts, so seeds that lead nowhere dense agrees with (at most a third of the
    # walk's best pages among dense's best, PPR_FALLBACK_AGREEMENT) count as no seeds (`fallback`).
    useless = (fallback and cfg.ppr_fallback and entity_seeded
               and dense_agreement(li.page_of(), cfg, dense_ids, ranked["chunk"]) <= PPR_FALLBACK_AGREEMENT)
    if not entity_seeded or useless:
        ranked["chunk"] = list(zip(dense_ids.tolist(), routes["chunk"].score.tolist()))
    return Stage3Result(ranked, trace={"reset_nodes": int((reset > 0).sum()), "entity_seeded": entity_seeded,
                                       "fell_back_to_dense": bool(not entity_seeded or useless)})


def _passage_degree(li: LoadedIndex, e: int) -> int:
    lo, hi = li.ga.indptr[e], li.ga.indptr[e + 1]
    return int((li.ga.etype[lo:hi] == EDGE_TYPE_CODES["passage"]).sum())


def run_dense(li, cfg: RetrievalConfig, routes: dict[str, Route]) -> Stage3Result:
    ranked = {}
    for kind in COLLECT:
        r = routes.get(kind)
        ranked[kind] = [] if r is None else list(zip(r.positions.tolist(), r.score.tolist()))
    return Stage3Result(ranked)


def _top_by_type(li: LoadedIndex, scores: np.ndarray, caps: dict[str, int]) -> dict[str, list[tuple[int, float]]]:
    """The `caps[kind]` best nodes of each kind with a positive score, best first (ties: lower
    index), without sorting the whole graph."""
    out: dict[str, list[tuple[int, float]]] = {}
    for kind in COLLECT:
        rows = li.nodes_of_type(NODE_TYPE_CODES[kind])
        nodes = rows[scores[rows] > 0]  # ascending
        k = caps[kind]
        if nodes.size > k:
            s = scores[nodes]
            cut = -np.partition(-s, k - 1)[k - 1] if k > 0 else np.inf
            above, tied = nodes[s > cut], nodes[s == cut]
            nodes = np.concatenate([above, tied[:k - above.size]])  # ties at the cut: lower index first
        nodes = nodes[np.lexsort((nodes, -scores[nodes]))]
        out[kind] = list(zip(nodes.tolist(), scores[nodes].tolist()))
    return out


def _by_type(li: LoadedIndex, nodes: np.ndarray, scores: np.ndarray) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {k: [] for k in COLLECT}
    codes = {NODE_TYPE_CODES[k]: k for k in COLLECT}
    for n, s in zip(nodes.tolist(), scores.tolist()):
        kind = codes.get(int(li.node_type[n]))
        if kind is not None:
            out[kind].append((int(n), float(s)))
    return out


def earn_their_slot(li: LoadedIndex, qv: np.ndarray, finals: dict[str, list[tuple[int, float]]],
                    cfg: RetrievalConfig) -> dict[str, list[tuple[int, float]]]:
    """Stage 4's quotas for code, tables and images are a maximum: one stays only if it sits
    on a page of the first `final_media_pages` chunks (a screenshot belongs beside the text
    it illustrates), and, with `final_modality_floor`, if its own cosine to the question
    reaches that share of the best final chunk's (docs/benchmarks.md, "Results that earn their slot")."""
    chunks = [n for n, _ in finals.get("chunk", [])]
    if not chunks or (cfg.final_media_pages <= 0 and cfg.final_modality_floor <= 0):
        return finals
    page = li.page_of()
    shown = set(page[chunks[:cfg.final_media_pages]].tolist()) if cfg.final_media_pages > 0 else None
    bar = cfg.final_modality_floor * float(li.cosine(qv, chunks).max())
    out = dict(finals)
    for kind in ("code", "table", "image"):
        items = finals.get(kind, [])
        if not items:
            continue
        keep = li.cosine(qv, [n for n, _ in items]) >= bar
        if shown is not None:  # an image merged from several pages counts for each of them
            keep &= np.array([bool(_pages_of(li, page, n) & shown) for n, _ in items])
        out[kind] = [it for it, ok in zip(items, keep.tolist()) if ok]
    return out


def _pages_of(li: LoadedIndex, page: np.ndarray, n: int) -> set[int]:
    lo, hi = li.ga.indptr[n], li.ga.indptr[n + 1]
    parents = li.ga.indices[lo:hi][li.ga.etype[lo:hi] == EDGE_TYPE_CODES["contains"]]
    return {int(page[n])} | set(page[parents].tolist())
