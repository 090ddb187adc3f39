"""The retrieval parameters (`RetrievalConfig`): one search's knobs, their bounds, their former
names and the ranking's fitted default weights (read once from `dgrag/rank_weights.json`).
`Settings.retrieval` holds one; a request, `--config` or `DGRAG_RETRIEVAL_*` overrides it."""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError
from .values import coerce as _coerce, short as _short


def _fitted_weights() -> dict[str, float]:
    """The chunk ranking's fitted default weights, from their data file (with its provenance)."""
    path = Path(__file__).resolve().parent.parent / "rank_weights.json"
    return {k: float(v) for k, v in json.loads(path.read_text(encoding="utf-8"))["weights"].items()}


FITTED = _fitted_weights()  # read once: the defaults of the `rank_w_*` below


@dataclass
class RetrievalConfig:
    """The retrieval parameters of one search; a request may override every one.

    Grouped by the stage that reads them, in the order a question passes through: `recall`
    (stage 1, vector search per route), `rerank` (stage 2), `walk` (stage 3: the method and the
    cost-aware diffusion over the graph), `rank` (the chunk ranking of retrieve/ranking.py: one
    linear score over named features, its weights fitted in dgrag/rank_weights.json), `ppr`
    (HippoRAG 2's walk: a feature of the ranking and the experimental method `ppr`) and `final`
    (stage 4: quotas, the last rerank, the trace). docs/configuration.md has a table per group.
    """

    ## recall: stage 1, the candidates vector search brings per route (facts, pages, sections)
    fact_candidate_k: int = 100  # facts recalled by vector search (the fact route)
    file_candidate_k: int = 100  # pages recalled by vector search (the file route)
    chunk_candidate_k: int = 100  # sections recalled by vector search (the chunk route)
    # stage-1 vector search: the loaded in-memory matrices (numpy, default: one consistent
    # snapshot with the graph, and faster, see bench P3) or the file's sqlite-vec tables
    vector_search: str = "numpy"  # numpy | sqlite-vec
    # candidates the approximate fact route takes from its HNSW index (its search breadth, at least
    # fact_candidate_k), rescored exactly with the float32 vectors: wider is slower and nearer
    # exact (800: recall@100 0.968 of exact for MuSiQue's questions at 1M facts, in 4.2 ms; 400
    # gave 0.935); 0 = exact search even where the index has one (see Settings.fact_ann_min_vectors)
    fact_ann_breadth: int = 800
    ## rerank: stage 2, what the rerank of each route keeps
    fact_top_k: int = 50  # facts kept after the rerank
    file_top_k: int = 50  # pages kept after the rerank
    chunk_top_k: int = 50  # sections kept after the rerank
    ## walk: stage 3, the method and the cost-aware diffusion over the graph (seeds, budgets)
    method: str = "diffusion"  # stage 3: diffusion (cost-aware best-first walk) | ppr (HippoRAG 2) | dense (no graph)
    fact_seed_k: int = 5  # best facts whose entities seed the diffusion (and PPR)
    file_seed_k: int = 5  # best pages that seed the diffusion
    fact_init_weight: float = 0.8  # seed weight of a matched fact's entities
    file_init_weight: float = 0.9  # seed weight of a matched page
    chunk_init_weight: float = 1.0  # seed weight of a matched section
    diffusion_chunk_k: int = 100  # sections the diffusion collects
    diffusion_code_k: int = 5  # code blocks the diffusion collects
    diffusion_table_k: int = 5  # tables the diffusion collects
    diffusion_image_k: int = 5  # images the diffusion collects
    diffusion_time_budget_s: float = 2.0  # the diffusion's time budget, seconds (never past the request's timeout)
    diffusion_max_expansions: int = 12000  # nodes the diffusion expands at most
    diffusion_per_node_neighbor_limit: int = 96  # edges relaxed per node, cheapest first (hub control)
    diffusion_max_frontier_size: int = 20000  # queued nodes at most
    diffusion_min_enqueue_score: float = 0.01  # a node scoring below this is not queued
    diffusion_engine: str = "jit"  # jit (numba-compiled loop) | python (the reference kernel)
    # from this many node vectors, a question's cosines are computed only for the nodes the
    # diffusion reaches (it reads ~14k of 224k at 500k nodes); below it, one matmul over all
    # of them is cheaper, since the diffusion then reads nearly every one
    diffusion_lazy_cosine_min_vectors: int = 100_000
    ## rank: the chunk ranking (retrieve/ranking.py), one linear score: `rank_w_<f>` weighs its feature f
    # (the defaults fitted with their provenance in dgrag/rank_weights.json, `python -m bench.ranker fit`;
    # a weight of 0 leaves a feature that costs work uncomputed)

    rank_candidate_k: int = 50  # candidates from each source: stage 2, lexical, bridge, the diffusion, PPR
    rank_w_base: float = FITTED["base"]  # weight of the stage-2 score (min-max over its candidates)
    # weight of the cosine margin to the best candidate (fitted to 0: base carries dense's order;
    # kept so that a refit may weigh it)
    rank_w_dense: float = FITTED["dense"]
    rank_w_lexical: float = FITTED["lexical"]  # weight of corpus-wide identifier-aware BM25 over its best
    rank_w_page: float = FITTED["page"]  # weight of the page's cosine margin to the best candidate page
    # weight of the cost-aware diffusion's score over its best (fitted to 0: the diffusion proposes
    # candidates, its score does not rank them)
    rank_w_diffusion: float = FITTED["diffusion"]
    rank_w_ppr: float = FITTED["ppr"]  # weight of the fact-seeded PPR score over its best
    # the walk behind `ppr` crosses the tree's `contains` edges too (file -> section ->
    # sub-section -> code). Off: a page or a parent section, joined to each of its parts, gathers
    # their mass as a hub and took the first place from the part that answers; HippoRAG's own
    # graph has no tree (docs/benchmarks.md, "PPR without the tree"). The method `ppr` walks every edge
    rank_ppr_tree: bool = False
    rank_w_evidence: float = FITTED["evidence"]  # weight of facts and named entities pointing at the passage
    # weight of a jump link to or from one of the best base passages' pages, its credit divided
    # by log2(1 + the pages the linked page is joined to)
    rank_w_link: float = FITTED["link"]
    rank_link_k: int = 5  # the best base passages whose linked pages count as `link` evidence
    # weight of the best cosine of the section and its code / tables / images (fitted to 0, and
    # not computed at 0; kept so that a refit may weigh it)
    rank_w_child: float = FITTED["child"]
    # weight of a mention of the passage's page name or heading in one of the best base passages
    # on another page (the next hop; it never takes the first place)
    rank_w_bridge: float = FITTED["bridge"]
    rank_bridge_k: int = 3  # the best base passages whose mentions count as `bridge` evidence
    # a title named by a top passage and the question together counts as `bridge` evidence too
    # (one of its terms from the passage): "British" asked, "Hong Kong" in the passage
    rank_bridge_question: bool = True
    rank_w_language: float = FITTED["language"]  # weight of a section in the question's language (bilingual corpora)
    # weight of the share of a section's own lines that are prose, minus 1 (0 for prose, -1 for a
    # heading alone or a list of links, retrieve/shape.py): such sections match by their
    # heading and answer nothing
    rank_w_prose: float = FITTED["prose"]
    # weight of a section of release notes when the question asks about no version or change (-1,
    # else 0; retrieve/shape.py): a changelog matches any question by its words
    rank_w_release: float = FITTED["release"]
    # weight of an API edge or an anchored jump link from one of the `rank_link_k` best base
    # passages to the section (retrieve/cross_refs.py), over log2(1 + its cross-references)
    rank_w_xref: float = FITTED["xref"]
    # PPR's places: where dense agrees with the fact-seeded PPR walk, every n-th place after the
    # head goes to PPR's best passage not yet ranked (0: never); it finds the later hops of a
    # multi-hop question that one linear score ranks too low
    rank_ppr_every: int = 3
    rank_ppr_head: int = 2  # the first places, always the weighted ranking's
    # where PPR's places apply: `passages`, an index whose every page is one section (a passage
    # corpus: a question's later hop is another page the facts' entities reach), or `any` index.
    # In a docs tree a section's siblings and the pages it links to are reached by the walk,
    # links and API edges; there the places took section R@5 down on three of seven dev sets and
    # up on none (docs/benchmarks.md, "PPR's places: passage corpora only")
    rank_ppr_in: str = "passages"
    # the rule "dense agrees with the walk": at least this share of the pages holding PPR's best
    # `diffusion_trust_k` passages hold one of dense's best `diffusion_trust_dense_k`. Half: it
    # holds on 32 of MuSiQue's 34 dev questions (LLM facts: the walk's best pages include dense's
    # first hop), on 3 of ArkUI-X's 79 (offline facts: hubs dense never ranks; docs/benchmarks.md,
    # "The weighted chunk ranking")
    rank_ppr_agreement: float = 0.5
    diffusion_trust_k: int = 8  # the walk's best passages whose pages the rule compares with dense's
    diffusion_trust_dense_k: int = 20  # dense recall's best passages the walk's pages are compared with
    # false: the ranking without the graph's own evidence (diffusion, ppr, evidence, link and bridge
    # weights, PPR's places and the question's bridge all off; the rest unchanged): the
    # "no graph" ablation, for anyone's index
    graph_features: bool = True
    ## ppr: HippoRAG 2's walk, the ranking's `ppr` feature and the experimental method `ppr`
    ppr_damping: float = 0.5  # the walk's damping (below 1)
    ppr_passage_weight: float = 0.05  # restart mass on passages, beside the entities'
    # the method `ppr` gives dense's passages when at most a third of the walk's best pages agree
    # with dense's (the rule above, `diffusion_trust_*`): offline, with no LLM to filter the
    # facts, such seeds are noise
    ppr_fallback: bool = True
    ppr_passage_top_k: int = 0  # passages that get restart mass (best dense first); 0 = all (HippoRAG 2)
    # push (local forward push, cost follows the reset mass: the default) | scipy (power
    # iteration over the whole graph) | igraph (prpack); push is within eps * degree per node
    ppr_engine: str = "push"
    ppr_push_eps: float = 1e-6  # the push's tolerance (work grows as 1/eps)
    ## final: stage 4, the quotas of the final context, its last rerank and the trace
    final_chunk_k: int = 10  # sections in the final context
    final_code_k: int = 2  # code blocks in the final context, at most
    final_table_k: int = 2  # tables in the final context, at most
    final_image_k: int = 2  # images in the final context, at most
    # the quotas above are a maximum: a code block, table or image is kept only if it sits on
    # a page of the first `final_media_pages` chunks (0 = any page)
    final_media_pages: int = 3
    # ... and only if its cosine to the question reaches this share of the best final chunk's (0 = no floor)
    final_modality_floor: float = 0.0
    final_rerank_backend: str = "none"  # none | cross-encoder | llm: a last rerank of the final candidates
    final_rerank_candidates: int = 20  # candidates the final rerank reads
    verbose: bool = False  # record the trace the inspector's picture reads (seeds, hops, scores)

    def merged(self, overrides: Mapping[str, Any] | None) -> "RetrievalConfig":
        """A copy with `overrides` applied; unknown keys are an error, values are coerced."""
        if not overrides:
            return dataclasses.replace(self)
        known = {f.name: f for f in fields(self)}
        most = len(known) + len(REMOVED)  # a full config saved before the removals still loads
        if len(overrides) > most:  # refused before anything is read: a request's keys cost nothing
            raise ConfigError(f"retrieval_config has {len(overrides)} keys; there are {len(known)} parameters")
        changes = {}
        for key, value in overrides.items():
            name = RENAMED.get(key, key) if isinstance(key, str) else key
            if name in REMOVED:
                _check_removed(name, value)
                continue
            if name not in known:
                raise ConfigError(f"unknown retrieval parameter: {_short(key)}")
            if name in changes:
                raise ConfigError(f"{name} is given twice (once by its former name)")
            changes[name] = _coerce(value, known[name].type, name)
        merged = dataclasses.replace(self, **changes)
        merged._without_graph()
        for name, allowed in (("method", ("diffusion", "ppr", "dense")), ("rank_ppr_in", PPR_PLACES),
                              ("final_rerank_backend", ("none", "cross-encoder", "llm")),
                              ("vector_search", ("numpy", "sqlite-vec")), ("diffusion_engine", ("jit", "python")),
                              ("ppr_engine", ("push", "scipy", "igraph"))):
            if getattr(merged, name) not in allowed:
                raise ConfigError(f"{name} must be one of {', '.join(allowed)}")
        merged._check_ranges()
        return merged

    def __post_init__(self) -> None:
        self._without_graph()

    def _without_graph(self) -> None:
        if not self.graph_features:
            for name in GRAPH_WEIGHTS:
                setattr(self, name, 0.0)
            self.rank_ppr_every, self.rank_bridge_question = 0, False

    def _check_ranges(self) -> None:
        # every count, budget and weight here is >= 0; a request must not be able to send the
        # kernels into an endless or out-of-bounds run
        # and bounded above, so that one request's work is bounded too
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if not math.isfinite(value) or value < 0:
                    raise ConfigError(f"{f.name} must be a finite number >= 0, not {value!r}")
                top = upper_bound(f.name)
                if top is not None and value > top:
                    raise ConfigError(f"{f.name} must be at most {top:g}, not {value!r}")
        if not self.ppr_damping < 1:
            raise ConfigError("ppr_damping must be below 1 (the walk must restart sometimes)")
        if not self.ppr_push_eps >= MIN_PPR_PUSH_EPS:
            raise ConfigError(f"ppr_push_eps must be at least {MIN_PPR_PUSH_EPS:g} (the push's work grows as 1/eps)")


# Former names still accepted (deprecated): a request's retrieval_config, `--config` and the
# DGRAG_RETRIEVAL_* variables may use them. The stage-3 method is named `diffusion` everywhere;
# its parameters were `spread_*` and its ranking weight `rank_w_walk`.
RENAMED = {**{f"spread_{n}": f"diffusion_{n}" for n in (
    "chunk_k", "code_k", "table_k", "image_k", "time_budget_s", "max_expansions", "per_node_neighbor_limit",
    "max_frontier_size", "min_enqueue_score", "engine", "lazy_cosine_min_vectors", "evidence_weight",
    "graph_fusion", "fusion_k", "trust_dense_k", "trust_floor", "trust_full")},
    "spread_trust_walk_k": "diffusion_trust_k", "rank_w_walk": "rank_w_diffusion",
    # a bar on the former trust scale (0 at a third of the walk's pages agreeing, 1 from two thirds),
    # now the share of them itself: at its default, 0.5, the same rule
    "rank_ppr_trust": "rank_ppr_agreement"}

# Parameters of the trust rule, the chunk ranking before the weighted one (`rank_mode: trust`:
# the graph's evidence lift and a fusion with PPR, switched on per question by a trust between
# a floor and a full agreement; docs/benchmarks.md, "When the graph is trusted"). The weighted
# ranking replaced it as the default and no figure was measured with it since, so it is gone:
# an old config naming one of these is accepted with its former default (with which the results
# are today's: the weighted ranking ignored the first four, and the floor and full made
# `rank_ppr_trust` 0.5 the same rule as `rank_ppr_agreement` 0.5) and refused with any other value
REMOVED = {"rank_mode": "evidence", "diffusion_evidence_weight": 0.5, "diffusion_graph_fusion": 2.0,
           "diffusion_fusion_k": 5, "diffusion_trust_floor": 0.34, "diffusion_trust_full": 0.66}
_REMOVED_TYPES = {"rank_mode": "str", "diffusion_fusion_k": "int"}  # the others were floats


def _check_removed(name: str, value: Any) -> None:
    """A removed parameter's value is accepted only where it asks for today's behaviour."""
    was = REMOVED[name]
    if _coerce(value, _REMOVED_TYPES.get(name, "float"), name) != was:
        raise ConfigError(f"{name} was removed with the trust rule (issue 36): the weighted chunk ranking "
                          f"(rank_w_*) is the only one; only {name}={was!r} is still accepted")

PPR_PLACES = ("passages", "any")  # rank_ppr_in's values
GRAPH_WEIGHTS = ("rank_w_diffusion", "rank_w_ppr", "rank_w_evidence", "rank_w_link", "rank_w_bridge", "rank_w_xref")  # graph_features

# Upper bounds of the retrieval parameters: far above any useful value (the defaults are 5-100),
# low enough that the most a request can ask for stays a fraction of a second to a few seconds
MAX_K = 1000  # every count of candidates, seeds, quotas (`*_k`, `*_candidates`)
MAX_BOUNDS = {"diffusion_time_budget_s": 10.0, "diffusion_max_expansions": 1_000_000,
              "diffusion_max_frontier_size": 1_000_000, "diffusion_per_node_neighbor_limit": 10_000,
              "final_rerank_candidates": 100, "fact_ann_breadth": 10_000,
              "rank_ppr_every": MAX_K, "rank_ppr_head": MAX_K, "rank_ppr_agreement": 1.0}
MIN_PPR_PUSH_EPS = 1e-9
MAX_RANK_WEIGHT = 100.0


def upper_bound(name: str) -> float | None:
    if name in MAX_BOUNDS:
        return MAX_BOUNDS[name]
    if name.startswith("rank_w_"):
        return MAX_RANK_WEIGHT
    if name.endswith("_k"):
        return MAX_K
    return None
