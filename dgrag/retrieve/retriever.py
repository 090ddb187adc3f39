"""The 4-stage retrieval: recall, rerank, diffusion (or PPR / dense), final quotas + context."""
from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..config import RetrievalConfig, Settings
from ..core import Route, RetrievalResult, Stage3Result, estimate_tokens, language_of
from ..embed import embed_text
from ..errors import DeadlineExceeded, DgragError, EmbeddingMismatch, QueryRejected
from ..store import NodeRows, Store
from .confidence import Calibrations, Evidence, evidence
from .context import build_references, merge_context
from .explain import rowid_trace
from .loaded import IndexHandle, LoadedIndex, QueryCosines
from .methods import (COLLECT, FINAL_POOL_FACTOR, FINAL_POOL_MIN, PPR_NOTE, earn_their_slot, run_dense,
                      run_diffusion, run_ppr)
from .stages import match_entities, recall_facts, recall_nodes, recall_nodes_sqlite_vec, rerank

# what a reranker reads of a candidate (embed.embed_text: breadcrumb and prose first): more than
# the 384 characters its vector holds, so that BM25 and a cross-encoder see past them, bounded so
# that stage 2's 100 candidates a route stay cheap to read and score
RERANK_TEXT_CHARS = 1000
LLM_RERANK_TEXT_CHARS = 400  # per candidate in the final LLM rerank's prompt: 20 of them stay ~8k characters
# the method dense has no graph to reach code / tables / images from its sections, so it recalls
# them directly: this many times the diffusion's quota of each, for stage 4 to keep the ones on
# the first chunks' pages (`final_media_pages`)
DENSE_MEDIA_FACTOR = 4
TRACE_ROUTE_TOP = 30  # entries of each stage-1/2 route the verbose trace keeps


# ---- entry checks: what one request may ask for ----------------------------------------------
class CheckedQuery(str):
    """A query check_query has passed: the edge checks once and passes it down as it is; the
    layers below see its type and do not check it again (a query the agent writes is a plain
    str, and is checked)."""


def check_query(query: Any, settings: Settings) -> CheckedQuery:
    """The query as it will be answered: NULs and lone surrogates replaced, stripped; refused
    (QueryRejected) when empty or longer than max_query_chars / max_query_tokens."""
    if isinstance(query, CheckedQuery):
        return query
    if not isinstance(query, str):
        raise QueryRejected("the query must be a string")
    if len(query) > settings.max_query_chars:  # checked first: the rest costs time in the length
        raise QueryRejected(f"the query has {len(query)} characters; at most {settings.max_query_chars} are accepted")
    query = query.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8").strip()
    if not query:
        raise QueryRejected("empty query")
    tokens = estimate_tokens(query)
    if tokens > settings.max_query_tokens:
        raise QueryRejected(f"the query has about {tokens} tokens; at most {settings.max_query_tokens} are accepted")
    return CheckedQuery(query)


class Retriever:
    """Answers retrieval requests against one index file; thread-safe. The query embedder is
    the model the file records (an explicitly configured other model is refused), in an
    instance of its own, not the indexer's."""

    def __init__(self, settings: Settings, handle: IndexHandle | None = None, embedder=None, reranker=None):
        from ..backends.rerankers import make_reranker

        self.settings = settings
        self.handle = handle or IndexHandle(settings.db_path, settings)
        self._given_embedder = embedder is not None
        self.embedder = embedder or self._embedder_for(_file_meta(self.handle.path))
        self.reranker = reranker or make_reranker(settings)
        self._local = threading.local()
        self.calibrations = Calibrations()
        if settings.retrieval.diffusion_engine == "jit":
            from ..kernels import diffusion_jit

            if diffusion_jit.available():
                from ..kernels import ppr_push

                diffusion_jit.warm_up()  # compile before the first question, not during it
                ppr_push.warm_up()

    def _store(self) -> Store:
        """One read-only connection per thread (SQLite connections are not shared)."""
        st = getattr(self._local, "store", None)
        gen = self.handle.generation
        if st is None or getattr(self._local, "generation", -1) != gen:
            # the file may have been replaced (a new build, a teammate's index opened): a new
            # connection. The previous one is closed one swap later, not now: a search that began
            # on it in this thread may still hold it (closing it under that search was a race)
            prev = getattr(self._local, "previous", None)
            if prev is not None:
                prev.close()
            self._local.previous = st
            st = self._local.store = Store(self.handle.path, readonly=True)
            self._local.generation = gen
        return st

    def _embedder_for(self, meta: Mapping[str, str]):
        from ..backends.embedder_choice import make_embedder, resolve_embedder

        return make_embedder(resolve_embedder(self.settings, meta, str(self.handle.path)), role="query")

    def _query_embedder(self, li: LoadedIndex):
        """The embedder for this snapshot: the file may have been replaced by one built with
        another model (a teammate's file opened in the app)."""
        recorded = li.meta.get("embedding_model")
        emb = self.embedder  # read once: another thread may set it for another snapshot meanwhile
        if recorded and recorded != emb.model_id:
            if self._given_embedder:
                raise EmbeddingMismatch(f"{li.path} was built with embedding model {recorded}, not {emb.model_id}")
            emb = self.embedder = self._embedder_for(li.meta)
        return emb

    def retrieve(self, query: str, overrides: Mapping[str, Any] | RetrievalConfig | None = None) -> dict:
        """The seed's JSON for one request (`search(...).to_api()`)."""
        return self.search(query, overrides).to_api()

    def search(self, query: str, overrides: Mapping[str, Any] | RetrievalConfig | None = None) -> RetrievalResult:
        """`overrides`: parameters over the settings' retrieval config, or a whole config the
        edge has already checked (RetrievalConfig); a copy either way, as the search writes to it."""
        query = check_query(query, self.settings)
        cfg = (dataclasses.replace(overrides) if isinstance(overrides, RetrievalConfig)
               else self.settings.retrieval.merged(overrides))
        deadline = time.monotonic() + self.settings.request_timeout_s  # end to end, the embedding included
        li = self.handle.get()  # one snapshot for the whole request
        embedder = self._query_embedder(li)
        timing: dict[str, float] = {}
        t0 = time.perf_counter()
        qv = embedder.embed_queries([query])[0].astype(np.float32)
        timing["stage1_query_embedding"] = time.perf_counter() - t0
        t = time.perf_counter()
        cos = QueryCosines(li, qv)  # stage 1's cosines, read again by stage 3
        routes = self._recall(li, qv, cfg, cos)
        exact = match_entities(li, query)
        timing["stage1_recall"] = time.perf_counter() - t
        t = time.perf_counter()
        _in_time(deadline, "recall")
        rows = NodeRows(self._store().con)  # this request's node rows, each read once
        routes = self._rerank(li, query, routes, cfg, rows)
        timing["stage2_rerank"] = time.perf_counter() - t
        t = time.perf_counter()
        # the diffusion's own budget never outlasts the request's
        cfg.diffusion_time_budget_s = min(cfg.diffusion_time_budget_s, _in_time(deadline, "rerank"))
        stage3 = self._stage3(li, cfg, qv, routes, exact, query, cos)
        timing["stage3_spread"] = time.perf_counter() - t  # the seed API's key for stage 3
        t = time.perf_counter()
        _in_time(deadline, "stage 3")
        finals = self._final(li, query, stage3, cfg, qv, rows)
        timing["stage4_final_rerank"] = time.perf_counter() - t
        t = time.perf_counter()
        _in_time(deadline, "the final rerank")
        refs = build_references(rows, li, finals, stage3.paths or {}, _why(stage3, cfg))
        context = merge_context(refs, self.settings)
        timing["stage4_merge"] = time.perf_counter() - t
        answerable, confidence = self.calibrations.get(li, embedder).judge(evidence(li, qv, query))
        timing["rag_total"] = time.perf_counter() - t0
        return RetrievalResult(query, cfg.method, refs, context, {k: round(v, 4) for k, v in timing.items()},
                               self._trace(li, routes, exact, stage3) if cfg.verbose else None,
                               answerable, confidence, PPR_NOTE if cfg.method == "ppr" else "")

    def judge(self, query: str) -> tuple[bool, float, Evidence]:
        """(answerable, confidence, the evidence) of a query alone, without a search."""
        li = self.handle.get()
        embedder = self._query_embedder(li)
        qv = embedder.embed_queries([check_query(query, self.settings)])[0].astype(np.float32)
        ev = evidence(li, qv, query)
        return (*self.calibrations.get(li, embedder).judge(ev), ev)

    # ---- stages ------------------------------------------------------------------------
    def _recall(self, li: LoadedIndex, qv: np.ndarray, cfg: RetrievalConfig,
                cos: QueryCosines | None = None) -> dict[str, Route]:
        """Stage 1's routes; `cos` keeps the file and chunk cosines they compute, for stage 3."""
        if cfg.vector_search == "sqlite-vec":
            def nodes(kind, k):
                return recall_nodes_sqlite_vec(self._store(), li, qv, kind, k)
        else:
            def nodes(kind, k):
                return recall_nodes(li, qv, kind, k, cos)
        routes = {"fact": recall_facts(li, qv, cfg.fact_candidate_k, cfg.fact_ann_breadth),
                  "file": nodes("file", cfg.file_candidate_k), "chunk": nodes("chunk", cfg.chunk_candidate_k)}
        if cfg.method == "dense":  # no graph to reach code / tables / images: recall them directly
            for kind, k in (("code", cfg.diffusion_code_k), ("table", cfg.diffusion_table_k), ("image", cfg.diffusion_image_k)):
                routes[kind] = nodes(kind, k * DENSE_MEDIA_FACTOR)
        return routes

    def _rerank(self, li: LoadedIndex, query: str, routes: dict[str, Route], cfg: RetrievalConfig,
                rows: NodeRows) -> dict[str, Route]:
        store = self._store()
        out = {}
        top_k = {"fact": cfg.fact_top_k, "file": cfg.file_top_k, "chunk": cfg.chunk_top_k}
        for kind, route in routes.items():
            if kind == "fact":
                texts = [f.text for f in store.semantic.facts_by_rowids(route.rowids(li))]
                if len(texts) != route.size:  # the file changed under the snapshot: keep cosine order
                    out[kind] = route.top(top_k[kind])
                    continue
            else:
                nodes = rows.get(route.rowids(li))
                texts = [embed_text(nodes[r], RERANK_TEXT_CHARS) if r in nodes else "" for r in route.rowids(li)]
            out[kind] = rerank(route, query, texts, self.reranker, top_k.get(kind, route.size))
        return out

    def _stage3(self, li, cfg, qv, routes, exact, query: str, cos: QueryCosines) -> Stage3Result:
        if cfg.method == "dense":
            return run_dense(li, cfg, routes)
        if cfg.method == "ppr":
            return run_ppr(li, cfg, qv, routes, exact, cos)
        return run_diffusion(li, cfg, qv, routes, exact, query, cos)

    def _final(self, li, query: str, stage3: Stage3Result, cfg: RetrievalConfig,
               qv: np.ndarray, rows: NodeRows) -> dict[str, list[tuple[int, float]]]:
        quotas = {"chunk": cfg.final_chunk_k, "code": cfg.final_code_k, "table": cfg.final_table_k,
                  "image": cfg.final_image_k}
        finals = {}
        for kind in COLLECT:
            ranked = stage3.ranked.get(kind, [])
            if cfg.final_rerank_backend == "cross-encoder" and ranked:
                pool = max(quotas[kind] * FINAL_POOL_FACTOR, FINAL_POOL_MIN)
                ranked = self._cross_rerank(li, query, ranked[:pool], rows)
            elif cfg.final_rerank_backend == "llm" and ranked and kind == "chunk":
                ranked = self._llm_rerank(li, query, ranked[:cfg.final_rerank_candidates], rows)
            finals[kind] = ranked[:quotas[kind]]
        return earn_their_slot(li, qv, finals, cfg)

    def _cross_rerank(self, li, query, ranked, rows: NodeRows):
        from ..backends.rerankers import make_reranker

        rr = make_reranker(self.settings, "cross-encoder")
        nodes = rows.get(li.rowids[[i for i, _ in ranked]].tolist())
        texts = [embed_text(nodes.get(int(li.rowids[i]), {"type": "x", "text": ""}), RERANK_TEXT_CHARS)
                 for i, _ in ranked]
        scores = rr.score(query, texts, np.array([s for _, s in ranked]))
        order = np.argsort(-scores, kind="stable")
        return [(ranked[i][0], float(scores[i])) for i in order]

    def _llm_rerank(self, li, query: str, ranked, rows: NodeRows):
        """The seed's final rerank by an LLM: numbered candidates in, {"ranking": [...]} out.
        Without an LLM, or on a failed call, the stage-3 order stands."""
        from ..backends.chat import chat_llm
        from ..errors import LLMError
        from ..prompts import render

        llm = chat_llm(self.settings)
        if llm is None:
            return ranked
        nodes = rows.get(li.rowids[[i for i, _ in ranked]].tolist())
        lines = [f"[{k}] {embed_text(nodes[int(li.rowids[i])], LLM_RERANK_TEXT_CHARS)}" for k, (i, _) in enumerate(ranked)
                 if int(li.rowids[i]) in nodes]
        prompt = render("final_rerank", language_of(query), question=query, candidates="\n".join(lines))
        try:
            order = llm.complete_json([{"role": "user", "content": prompt}]).get("ranking", [])
        except (LLMError, AttributeError):
            return ranked
        picked = [int(k) for k in order if isinstance(k, int) and 0 <= k < len(ranked)]
        seen = list(dict.fromkeys(picked))
        return [ranked[k] for k in seen] + [r for k, r in enumerate(ranked) if k not in set(seen)]

    def _trace(self, li: LoadedIndex, routes, exact, stage3: Stage3Result) -> dict:
        def ids(idx):
            return [str(x) for x in li.rowids[np.asarray(idx, dtype=np.int64)].tolist()] if len(idx) else []

        top = TRACE_ROUTE_TOP
        trace = {"routes": {k: {"rowids": [str(x) for x in r.rowids(li, top)] if k != "fact" else r.rowids(li, top),
                                "cosine": np.round(r.cosine[:top], 4).tolist(),
                                "score": np.round(r.score[:top], 4).tolist()} for k, r in routes.items()},
                 "exact_entities": ids(exact)}
        st = rowid_trace(li, stage3.trace, stage3.paths)
        trace["stage3"] = st
        return trace


def _why(stage3: Stage3Result, cfg: RetrievalConfig) -> dict[int, dict] | None:
    """What ranked each chunk, as stage 3 scored it; where a final rerank reordered the chunks
    (and, with the cross-encoder, scored them), each says so (`reranked_by`)."""
    if not stage3.why or cfg.final_rerank_backend == "none":
        return dict(stage3.why) if stage3.why else None
    return {n: {**w, "reranked_by": cfg.final_rerank_backend} for n, w in stage3.why.items()}


def _in_time(deadline: float, after: str) -> float:
    """Seconds left before `deadline`; DeadlineExceeded if none."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise DeadlineExceeded(f"the request ran out of time after {after}")
    return left


def _file_meta(path: Path) -> dict:
    """The index file's meta ({} when there is no file yet: the settings decide)."""
    if not Path(path).exists():
        return {}
    try:
        with Store(path, readonly=True) as st:
            return st.meta.items()
    except DgragError:
        return {}  # a broken file is reported by the load, with its own message
