"""Indexing, enrichment and the background job, written once.

The CLI (`dgrag index`, `dgrag enrich`), the app (`dgrag.web.service`: the Index tab and the first
start's progressive build) and the benchmarks call these; none of them has a flow of its own.
"""
from .indexing import EnrichReport, enrich_index, index_docs, offline_layer, open_llm
from .jobs import Job, JobCancelled, Writer
from .progressive import BuildStatus, Progressive, demo_batches

__all__ = ["BuildStatus", "EnrichReport", "Job", "JobCancelled", "Progressive", "Writer", "demo_batches",
           "enrich_index", "index_docs", "offline_layer", "open_llm"]
