"""Build the demo's prebuilt index and publish it for the Space to fetch at build time.

    python scripts/publish_snapshot.py [--docs data/arkui-x-docs] [--work build/arkui-x.db]
        [--out dist/arkui-x.snapshot.db] [--repo datasets/OWNER/NAME [--readme]] [--to-data]

1. builds the demo index of --docs into --work as the app's first start does (every step: pages,
   code / tables / images, the semantic layer; a rerun resumes, an unchanged corpus costs a hash
   check per page);
2. stamps it with the corpus (the folder's name, a hash of its pages' digests), which the app
   checks at start;
3. writes its compact snapshot (`dgrag snapshot`) to --out;
4. publishes it: --repo uploads it to that Hub repo (huggingface_hub, a token with write access)
   and prints the front-matter lines; --readme writes them into README.md (`preload_from_hub`
   then puts the file in the Space's Hub cache at build time, where the app finds it offline);
   --to-data copies it to data/ instead (a Space-repo file: commit it with Git LFS).

The app takes it only when no index file exists yet, and refuses it (one line, then the normal
build) when it is of another index version, embedding model or corpus: publish again after
a schema change or a corpus update.
"""
from __future__ import annotations

import argparse
import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def build(docs: Path, work: Path) -> None:
    from dgrag.config import Settings
    from dgrag.web.service import Service

    settings = dataclasses.replace(Settings.from_env(), db_path=work, docs_root=docs)
    Service(settings).ensure_index()


def snapshot(work: Path, out: Path) -> None:
    if out.exists():
        out.unlink()
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "dgrag", "snapshot", str(out), "--db", str(work)], check=True,
                   cwd=ROOT)


def front_matter_line(repo: str, filename: str) -> str:
    return f"  - {repo} {filename}"


def write_readme(readme: Path, repo: str, filename: str) -> None:
    """Add (or replace) the preload_from_hub entry of `filename` in README's front matter."""
    head, sep, rest = readme.read_text(encoding="utf-8")[3:].partition("\n---")
    lines = [ln for ln in head.splitlines() if not (ln.strip().startswith("- ") and filename in ln.split())]
    entry = front_matter_line(repo, filename)
    if "preload_from_hub:" in lines:
        lines.insert(lines.index("preload_from_hub:") + 1, entry)
    else:
        lines += ["preload_from_hub:", entry]
    readme.write_text("---" + "\n".join(lines) + sep + rest, encoding="utf-8")


def upload(out: Path, repo: str) -> None:
    from huggingface_hub import HfApi

    kind, _, repo_id = repo.partition("/") if repo.startswith(("datasets/", "spaces/")) else ("models", "", repo)
    HfApi().upload_file(path_or_fileobj=str(out), path_in_repo=out.name, repo_id=repo_id,
                        repo_type=kind.rstrip("s"), commit_message="dgrag: the demo's prebuilt index")


def main(argv: list[str] | None = None) -> int:
    from dgrag.web.builds import demo_docs
    from dgrag.workflows.shipped import stamp

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=Path, default=None, help="the corpus (default: the demo's)")
    ap.add_argument("--work", type=Path, default=ROOT / "build" / "arkui-x.db", help="the full index, kept to resume")
    ap.add_argument("--out", type=Path, default=ROOT / "dist" / "arkui-x.snapshot.db")
    ap.add_argument("--repo", default="", help='the Hub repo to upload to, e.g. "datasets/you/dgrag-demo-index"')
    ap.add_argument("--readme", action="store_true", help="write the preload_from_hub entry into README.md")
    ap.add_argument("--to-data", action="store_true", help="copy the snapshot into data/ (a Space-repo file)")
    args = ap.parse_args(argv)
    docs = (args.docs or demo_docs()).resolve()
    build(docs, args.work)
    record = stamp(args.work, docs)
    snapshot(args.work, args.out)
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.1f} MB, corpus {record['name']} "
          f"({record['pages']} pages, {record['hash'][:12]})", file=sys.stderr)
    if args.to_data:
        shutil.copyfile(args.out, ROOT / "data" / args.out.name)
        print(f"copied to data/{args.out.name}: commit it with Git LFS", file=sys.stderr)
    if args.repo:
        upload(args.out, args.repo)
        print("README.md front matter:\npreload_from_hub:\n" + front_matter_line(args.repo, args.out.name))
        if args.readme:
            write_readme(ROOT / "README.md", args.repo, args.out.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
