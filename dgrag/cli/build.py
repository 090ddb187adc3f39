"""Commands that build or inspect the index file: index, stats, snapshot, enrich,
import-passages, import-openie."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import DgragError
from .common import ProgressBar, open_index, print_report, require_index, settings_for


def cmd_index(args) -> int:
    from ..store import Store
    from ..workflows import index_docs

    settings = settings_for(args)
    if settings.docs_root is None:
        raise DgragError("which docs folder? give it as `dgrag index DOCS` or set DGRAG_DOCS_ROOT")
    if not Path(settings.docs_root).is_dir():
        raise DgragError(f"no docs folder at {settings.docs_root}")
    bar = ProgressBar(not args.quiet)
    with Store(settings.db_path) as store:
        try:  # an existing file keeps its model; --embedder / DGRAG_EMBEDDER choose it for a new one
            report = index_docs(settings, store, embed=not args.no_embed, progress=bar)
        finally:
            bar.close()
        stats = store.stats()
    if args.json:
        print(json.dumps({"report": report.as_dict(), "stats": stats}, ensure_ascii=False, indent=2))
    else:
        _print_index_report(report, stats)
    return 0


def _print_site(site: dict, dialect: dict) -> None:
    """The generator found, its URLs and languages, and what its Markdown held."""
    parts = site.get("parts") or []
    where = f" ({site['config']})" if site.get("config") else ""
    print(f"site: {site.get('generator', 'plain')}{where}; " + (", ".join(
        f"{p['content'] or '.'} -> {p['url'] or '(no site URL: set --site-url)'}"
        + (f" [{p['language']}]" if p["language"] else "") for p in parts[:6]) or "every page, source links"))
    for note in site.get("notes", [])[1:]:
        print(f"  {note}")
    if dialect:
        seen = ", ".join(f"{n} {k}" for k, n in dialect.get("recognised", {}).items()) or "nothing beyond CommonMark"
        print(f"markdown: {seen}; {dialect.get('pages_outside_site', 0)} Markdown files outside the site")
        print(f"includes: {dialect.get('includes_read', 0)} read, {len(dialect.get('includes_refused', []))} refused "
              f"(outside the include root), {len(dialect.get('includes_missing', []))} missing")
        raw = dialect.get("left_raw") or {}
        print("left raw: " + (", ".join(f"{n} {k}" for k, n in raw.items()) if raw else "none"))
        for key, what in (("drafts", "drafts and never-rendered pages skipped"), ("reference_stubs", "generated reference stubs"),
                          ("release_notes", "release notes (ranked for questions about versions)")):
            if dialect.get(key):
                print(f"{what}: {len(dialect[key])} ({', '.join(dialect[key][:5])})")


def _print_index_report(report, stats: dict) -> None:
    _print_site(report.site, report.dialect)
    added = report.nodes_added
    print(f"indexed {report.files_indexed} files ({report.files_unchanged} unchanged, "
          f"{report.files_deleted} deleted) of {report.files_seen} in {report.seconds:.1f} s")
    print("added: " + ", ".join(f"{added.get(t, 0)} {t}" for t in ("file", "chunk", "code", "table", "image")))
    n = stats["nodes"]
    print(f"index: {n['file']} files, {n['chunk']} chunks, {n['code']} code, {n['table']} tables, "
          f"{n['image']} images; {report.images_merged} duplicate images merged; "
          f"{report.jump_edges} jump edges, {report.api_edges} API edges; {report.embedded} texts embedded")
    broken = [p for p in report.problems if "broken link" in p]
    other = [p for p in report.problems if "broken link" not in p]
    print(f"problems: {len(broken)} broken links, {len(other)} other (image missing/unreadable, ...)")
    for p in other[:20]:
        print("  " + p)
    print(f"files skipped: {len(report.skipped)}")
    for path, why in report.skipped:
        print(f"  {path}: {why}")


def cmd_stats(args) -> int:
    from ..store import Store

    path = require_index(settings_for(args).db_path)
    with Store(path, readonly=True) as store:
        stats = store.stats()
    if args.json:
        print(json.dumps(stats, indent=2, ensure_ascii=False))
        return 0
    ix = stats["index"]
    print(f"{path}  ({stats['size_bytes'] / 1e6:.1f} MB)")
    print(f"embedding model: {ix['embedding_model'] or '- (no vectors yet)'}, dimension {ix['embedding_dim'] or '-'}")
    print(f"schema version {ix['schema_version']}, written by dgrag {ix['dgrag_version'] or '(not recorded)'}")
    print(f"docs: {ix['docs_root'] or '-'}" + (f"  (source URLs {ix['url_template']})" if ix["url_template"] else ""))
    held = ix.get("docs_version") or {}
    if held.get("pages") is not None:
        print(f"holds: {held['pages']} pages, indexed {held['indexed_at']}" + (
            f"; synced from {held['repo']} {held['branch']} at {held['commit']} ({held['commit_time']})"
            if held.get("commit") else ""))
    if ix.get("site"):
        _print_site(ix["site"], ix.get("dialect") or {})
    if ix.get("openie_packs"):   # the offline OpenIE's knowledge, as the last enrichment chose it
        from ..enrich.openie_choice import PackChoice

        print(f"offline OpenIE packs: {PackChoice.from_dict(ix['openie_packs']).describe()}")
    for section in ("nodes", "edges", "vectors", "semantic"):
        print(f"{section}: " + ", ".join(f"{k} {v}" for k, v in stats[section].items()))
    for kind, a in stats["ann"].items():  # past fact_ann_min_vectors, the route's stored index
        print(f"approximate index: {kind}, {a['library']} over {a['vectors']} vectors, {a['bytes'] / 1e6:.1f} MB")
    return 0


def cmd_snapshot(args) -> int:
    from ..retrieve.loaded import ensure_fact_ann, ensure_graph_cache
    from ..store import Store
    from ..store.store import rollback_journal

    settings = settings_for(args)
    path, dest = require_index(settings.db_path), Path(args.dest)
    if dest.exists():
        raise DgragError(f"{dest} exists; choose a new file name")
    cached = ensure_graph_cache(path)  # a replica of the copy then has nothing to build or write
    int8 = args.compact and not args.float32
    with Store(path, readonly=True) as store:
        store.copy_to(dest, compact=args.compact, int8=int8)
    # nor, past fact_ann_min_vectors, an HNSW index: built on the copy's vectors (int8 ones read
    # back differ from the float32 an index of the original was built on)
    fact_search = ensure_fact_ann(dest, settings)
    if fact_search is not None:
        rollback_journal(dest)  # the copy serves from a read-only folder, as compact_file left it
        print(f"fact route: {fact_search}", file=sys.stderr)
    print(f"{dest}  ({dest.stat().st_size / 1e6:.1f} MB): serve it with `dgrag serve --db {dest}` "
          f"(or DGRAG_DB_PATH={dest} python app.py)")
    if not cached:
        print("note: the graph snapshot could not be stored first (the index is busy or read-only);"
              " the copy's first start rebuilds it", file=sys.stderr)
    return 0


def cmd_enrich(args) -> int:
    from ..workflows import enrich_index

    settings = settings_for(args)
    steps = ["summaries", "captions", "openie"] if args.step == "all" else [args.step]
    bar = ProgressBar(not args.quiet)
    with open_index(settings) as store:
        if not settings.llm_configured and not args.quiet:
            print("no LLM configured (DGRAG_LLM_BASE_URL, DGRAG_LLM_MODEL): using the offline path", file=sys.stderr)
        rep = enrich_index(settings, store, steps, progress=bar, max_workers=settings.max_workers,
                           retry_failed=args.retry_failed, limit=args.limit, dry_run=args.dry_run)
        out = rep.as_dict()
        if args.dry_run:
            out.pop("semantic_layer")
        out["stats"] = store.stats()
    bar.close()
    print_report(out, args.json)
    return 0


def cmd_import_passages(args) -> int:
    from ..backends.embedder_choice import embedder_for_store
    from ..enrich.importers import import_passages
    from ..embed import embed_pending
    from ..store import Store

    settings = settings_for(args)
    corpus = _input_file(args.corpus)  # checked before the index file is created
    bar = ProgressBar(not args.quiet)
    with Store(settings.db_path) as store:  # created when absent
        emb = embedder_for_store(settings, store)
        out = import_passages(store, corpus, bar)
        store.bind_embedder(emb.model_id, emb.dim)
        out["embedded"] = embed_pending(store, emb, settings, bar)
    bar.close()
    print_report(out, args.json)
    return 0


def cmd_import_openie(args) -> int:
    from ..backends.embedder_choice import embedder_for_store
    from ..enrich import semantic_layer
    from ..enrich.importers import import_openie

    settings = settings_for(args)
    openie = _input_file(args.openie)
    bar = ProgressBar(not args.quiet)
    with open_index(settings) as store:
        embedder = embedder_for_store(settings, store)
        out = import_openie(store, openie, bar)
        out["semantic_layer"] = semantic_layer.finalize(store, settings, embedder, bar)
        out["stats"] = store.stats()
    bar.close()
    print_report(out, args.json)
    return 0


def _input_file(name: str) -> Path:
    path = Path(name)
    if not path.is_file():
        raise DgragError(f"no file at {path}")
    return path
