"""A prebuilt demo index shipped with the Space: found offline at the first start, checked,
copied into place and served at once; only the pages that differ are indexed again.

`scripts/publish_snapshot.py` builds the demo index, writes its compact snapshot and stamps it
with the corpus it was built from (`stamp`: the docs folder's name, a hash over its pages'
digests). A Space fetches that file at build time: `preload_from_hub` in README's front matter
puts it in the Hub cache (`<cache>/<type>s--<owner>--<name>/snapshots/<rev>/<file>`, `refs/main`
naming the revision), or the repository carries it in data/. At start, with no index file yet,
`install` looks there, checks the snapshot against this dgrag and this corpus, and copies it to
the index path:

* another index version (schema), another embedding model, no stamp, another corpus (its
  name, or more than half of its pages differ): refused (`SnapshotRefused`, one line), and the
  normal first-start build runs;
* the same corpus: served as it is;
* a few pages changed, added or removed: served at once, and those pages are indexed again in
  the background (the incremental indexer skips every page whose digest is unchanged).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..config import PROJECT_ROOT, Settings
from ..errors import DgragError
from ..ingest.pipeline import list_pages, read_by_older_reader, read_logged
from ..store import Store
from ..store.connect import latest_version
from ..store.store import read_header, rollback_journal
from .progressive import META_KEY

CORPUS_KEY = "shipped_corpus"  # the stamp: {"name", "hash", "pages"}
README = PROJECT_ROOT / "README.md"


class SnapshotRefused(DgragError):
    """A shipped snapshot that this dgrag or this corpus cannot take as it is."""


@dataclass
class Installed:
    source: Path
    changed: list[str] = field(default_factory=list)  # pages whose digest differs (added ones too)
    removed: list[str] = field(default_factory=list)
    reread: bool = False  # read by an older reader: every page is read again (only what differs embedded)

    @property
    def same(self) -> bool:
        return not self.changed and not self.removed and not self.reread


def page_digests(docs: Path, include: str = "") -> dict[str, str]:
    """Each page's sha256: the digest the indexer keeps for a plain page (`read_logged`)."""
    return {p: hashlib.sha256((Path(docs) / p).read_bytes()).hexdigest() for p in list_pages(Path(docs), include)}


def corpus_hash(digests: dict[str, str]) -> str:
    return hashlib.sha256("\n".join(f"{p} {d}" for p, d in sorted(digests.items())).encode()).hexdigest()


def stamp(db: Path, docs: Path, include: str = "") -> dict:
    """Record in the index file the corpus it was built from (what `install` checks)."""
    digests = page_digests(docs, include)
    record = {"name": Path(docs).name, "hash": corpus_hash(digests), "pages": len(digests)}
    with Store(db) as st:
        st.note({CORPUS_KEY: json.dumps(record)})
    return record


def preloaded(settings: Settings, readme: Path = README) -> list[tuple[str, str]]:
    """(repo, file) candidates: `snapshot_repo` when set ("off": none), else README's
    `preload_from_hub` entries that list `snapshot_file`."""
    want = settings.snapshot_repo.strip()
    if want.lower() == "off":
        return []
    if want:
        return [(want, settings.snapshot_file)]
    out = []
    for repo, files in _front_matter_preloads(readme):
        if settings.snapshot_file in files:
            out.append((repo, settings.snapshot_file))
    return out


def _front_matter_preloads(readme: Path) -> list[tuple[str, list[str]]]:
    """`preload_from_hub:` entries ("- [datasets/]owner/name file1,file2 [revision]") of the
    front matter, read line by line (no YAML parser needed for this one list)."""
    try:
        text = readme.read_text(encoding="utf-8")
    except OSError:
        return []
    if not text.startswith("---"):
        return []
    out, inside = [], False
    for line in text.split("\n---", 1)[0].splitlines()[1:]:
        if line.startswith("preload_from_hub:"):
            inside = True
        elif inside and line.lstrip().startswith("- "):
            parts = line.strip()[2:].split()
            if parts:
                out.append((parts[0], parts[1].split(",") if len(parts) > 1 else []))
        elif inside and line.strip() and not line.startswith(" "):
            inside = False
    return out


def hub_cache() -> Path:
    """Where the Hub client (and preload_from_hub) keeps its cache: HF_HUB_CACHE, else
    HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    return Path(home) / "hub"


def in_hub_cache(repo: str, filename: str, cache: Path | None = None) -> Path | None:
    """The file of `repo` ("owner/name": a model; "datasets/owner/name", "spaces/...") at the
    revision refs/main names (else the newest snapshot), if the cache holds it."""
    parts = repo.strip("/").split("/")
    kind, owner_name = ("model", parts) if len(parts) == 2 else (parts[0].rstrip("s"), parts[1:])
    if len(owner_name) != 2:
        return None
    folder = (cache or hub_cache()) / f"{kind}s--{owner_name[0]}--{owner_name[1]}"
    ref = folder / "refs" / "main"
    revisions = [ref.read_text().strip()] if ref.is_file() else []
    snapshots = folder / "snapshots"
    if snapshots.is_dir():
        revisions += [p.name for p in sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)]
    for rev in revisions:
        path = snapshots / rev / filename
        if path.is_file():
            return path
    return None


def find(settings: Settings) -> Path | None:
    """The shipped snapshot: in the Hub cache (preload_from_hub), else in data/."""
    for repo, filename in preloaded(settings):
        found = in_hub_cache(repo, filename)
        if found is not None:
            return found
    local = PROJECT_ROOT / "data" / settings.snapshot_file
    return local if settings.snapshot_repo.strip().lower() != "off" and local.is_file() else None


def check(snapshot: Path, settings: Settings, docs: Path) -> Installed:
    """Whether `snapshot` fits this dgrag and this corpus (SnapshotRefused, one line, if not),
    and which of the corpus's pages differ from the ones it holds."""
    from ..backends.embedder_choice import DEFAULT_EMBEDDER, model_id_of

    try:
        head = read_header(snapshot)
    except DgragError as exc:
        raise SnapshotRefused(f"the shipped index {snapshot} cannot be read: {exc}") from None
    if head["schema_version"] != latest_version():
        raise SnapshotRefused(f"the shipped index has index version {head['schema_version']} and this dgrag "
                              f"writes version {latest_version()}; publish it again with scripts/publish_snapshot.py")
    wanted = model_id_of(settings if settings.embedder else _with(settings, embedder=DEFAULT_EMBEDDER))
    have = head["meta"].get("embedding_model")
    if have != wanted:
        raise SnapshotRefused(f"the shipped index was built with embedding model {have}, and this app "
                              f"embeds with {wanted}")
    try:
        record = json.loads(head["meta"].get(CORPUS_KEY) or "")
    except ValueError:
        raise SnapshotRefused("the shipped index records no corpus (not written by "
                              "scripts/publish_snapshot.py)") from None
    if record.get("name") != Path(docs).name:
        raise SnapshotRefused(f"the shipped index is of the corpus {record.get('name')!r}, not {Path(docs).name!r}")
    digests = page_digests(docs, settings.include)
    held = {p: read_logged(v) for p, v in head["pages"].items()}
    reread = any(read_by_older_reader(v) for v in head["pages"].values())
    if record.get("hash") == corpus_hash(digests):
        return Installed(snapshot, reread=reread)
    changed = sorted(p for p, d in digests.items() if held.get(p, (None,))[0] != d)
    removed = sorted(p for p in held if p not in digests)
    if len(changed) + len(removed) > max(len(digests), len(held)) / 2:
        raise SnapshotRefused(f"the shipped index is of another version of {Path(docs).name}: "
                              f"{len(changed) + len(removed)} of its {len(held)} pages differ")
    return Installed(snapshot, changed, removed, reread)


def _with(settings: Settings, **kw) -> Settings:
    import dataclasses

    return dataclasses.replace(settings, **kw)


def install(settings: Settings, docs: Path, db: Path) -> Installed | None:
    """Copy the shipped snapshot to `db` (absent) if there is one and it fits (else
    SnapshotRefused); None when there is none. The copy is made to know this machine's docs
    folder, so that the app treats it as its own finished build."""
    snapshot = find(settings)
    if snapshot is None:
        return None
    found = check(snapshot, settings, docs)
    db = Path(db)
    staged = db.with_name(db.name + ".shipped")
    db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(snapshot, staged)  # the cache's file is a link into its blobs: a copy of its bytes
    with Store(staged) as st:  # bookkeeping only: the stored graph snapshot stays valid (a fast first load)
        rec = json.loads(st.meta.get(META_KEY) or "{}")
        # pages differ: unfinished until `refresh` ends (a restart before then resumes a build)
        rec = {**rec, "docs": str(docs)} if found.same else {**rec, "docs": str(docs), "plan": "refresh pending"}
        st.note({META_KEY: json.dumps(rec), "docs_root": str(docs)})
    rollback_journal(staged)  # as the snapshot came: one file, no -wal beside it
    os.replace(staged, db)
    return found


def refresh(settings: Settings, store: Store, found: Installed, progress=None) -> dict:
    """Index the pages that differ (every page is hash-checked: the unchanged ones are
    skipped), drop the removed ones, embed what has no vector, and the offline semantic layer
    for what is new."""
    from .indexing import index_docs, offline_layer

    report = index_docs(settings, store, progress=progress)
    layer = offline_layer(settings, store, progress=progress)
    return {"files_indexed": report.files_indexed, "changed": len(found.changed), "removed": len(found.removed),
            "semantic_layer": layer.get("semantic_layer", {})}
