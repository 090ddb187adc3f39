"""The first start with the shipped prebuilt index: how soon does `python app.py` answer from all of it?

    python -m bench.shipped --work build/arkui-x.db [--docs D] [--changed 0] [--json]

--work is the whole demo index as `scripts/publish_snapshot.py` builds it (built here if absent:
~11 min on 2 cores). The bench stamps it and writes its compact snapshot (as the script does),
lays the snapshot out in a fresh Hub cache as `preload_from_hub` leaves it (blobs/, snapshots/<rev>/,
refs/main), then starts `python app.py` offline (HF_HUB_OFFLINE=1) with no index file, and times
from the start of the process:

* health: /health answers;
* whole: /health shows the index loaded with every node and fact of the snapshot (every page,
  code, tables, images and the semantic layer: the whole dual graph) and no build to run;
* first answer: a /retrieve answered.

With --changed N, N pages of a copy of the corpus are edited first: `refreshed` is when the
background job that indexes them again has finished.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPO = "datasets/bench/dgrag-demo-index"
FILE = "arkui-x.snapshot.db"


def lay_out(cache: Path, snapshot: Path) -> None:
    folder = cache / ("datasets--" + "--".join(REPO.split("/")[1:]))
    data = snapshot.read_bytes()
    blob = folder / "blobs" / hashlib.sha256(data).hexdigest()
    blob.parent.mkdir(parents=True)
    shutil.copyfile(snapshot, blob)
    rev = "0" * 40
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(rev)
    link = folder / "snapshots" / rev / FILE
    link.parent.mkdir(parents=True)
    link.symlink_to(os.path.relpath(blob, link.parent))


def _get(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return json.loads(resp.read())
    except OSError:
        return None


def start(work: Path, docs: Path, snapshot_nodes: int, timeout: float) -> dict:
    cache = work / "hub"
    db = work / "served" / "arkui-x.db"
    port = 7900 + os.getpid() % 90
    env = {**os.environ, "DGRAG_DB_PATH": str(db), "DGRAG_DOCS_ROOT": str(docs), "DGRAG_SNAPSHOT_REPO": REPO,
           "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "GRADIO_ANALYTICS_ENABLED": "False"}
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(ROOT / "app.py"), "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    out: dict = {}
    try:
        while time.monotonic() - t0 < timeout:
            health = _get(url + "/health")
            if health is not None:
                out.setdefault("health_s", round(time.monotonic() - t0, 1))
                if (health.get("nodes") == snapshot_nodes and health.get("build") is None and "whole_s" not in out
                        and health.get("facts")):
                    out["whole_s"] = round(time.monotonic() - t0, 1)
                    out["nodes"], out["facts"] = health["nodes"], health["facts"]
                    body = json.dumps({"query": "How do I create an ArkUI-X project?"}).encode()
                    req = urllib.request.Request(url + "/retrieve", body, {"Content-Type": "application/json"})
                    with urllib.request.urlopen(req, timeout=120) as resp:
                        out["first_answer_s"] = round(time.monotonic() - t0, 1) if resp.status == 200 else None
                job = health.get("job")
                if "whole_s" in out and (job is None or job.get("done")):
                    if job is not None:
                        out["refreshed_s"] = round(time.monotonic() - t0, 1)
                    break
            time.sleep(0.2)
    finally:
        proc.terminate()
        err = proc.communicate(timeout=60)[1]
    out["stderr"] = [ln for ln in err.splitlines() if "shipped" in ln or "index" in ln][:5]
    return out


def main(argv: list[str] | None = None) -> dict:
    sys.path.insert(0, str(ROOT / "scripts"))
    import publish_snapshot

    from dgrag.store import Store
    from dgrag.web.builds import demo_docs
    from dgrag.workflows.shipped import stamp

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=ROOT / "build" / "arkui-x.db")
    ap.add_argument("--docs", type=Path, default=None, help="another corpus than the demo's (e.g. the test excerpt)")
    ap.add_argument("--changed", type=int, default=0, help="pages edited in a copy of the corpus first")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    docs = (args.docs or demo_docs()).resolve()
    publish_snapshot.build(docs, args.work)
    stamp(args.work, docs)
    tmp = Path(tempfile.mkdtemp(prefix="dgrag-bench-shipped-"))
    snapshot = tmp / FILE
    t = time.monotonic()
    publish_snapshot.snapshot(args.work, snapshot)
    snapshot_s = time.monotonic() - t
    with Store(snapshot, readonly=True) as st:
        nodes = sum(st.stats()["nodes"].values())
    lay_out(tmp / "hub", snapshot)
    served_docs = docs
    if args.changed:
        served_docs = tmp / docs.name
        shutil.copytree(docs, served_docs)
        for page in sorted(served_docs.rglob("*.md"))[:args.changed]:
            page.write_text(page.read_text(encoding="utf-8") + "\n\nEdited after publishing.\n", encoding="utf-8")
    out = {"snapshot_mb": round(snapshot.stat().st_size / 1e6, 1), "snapshot_s": round(snapshot_s, 1),
           "changed_pages": args.changed, **start(tmp, served_docs, nodes, args.timeout)}
    print(json.dumps(out, indent=None if args.json else 2))
    shutil.rmtree(tmp, ignore_errors=True)
    return out


if __name__ == "__main__":
    main()
