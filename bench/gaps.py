"""The gap report on a generated question log with planted gaps (docs/benchmarks.md, "The gap report").

    python -m bench.gaps --source /work/idx/arkui.db --work /tmp/gaps [--split dev|test|both] [--seed N]

1. The index: a copy of a full ArkUI-X index (--source) with the `removed` pages of
   bench/gaps/questions.json taken out of both language trees, through the store's page-removal
   path (the one `dgrag index` takes for a deleted file).
2. A log per split, each in its own copy of that index (the log lives in the index file): the
   split's gap topics (topics the docs lack, several paraphrases each, en and zh), the
   questions on its removed pages, and ordinary questions (bench/arkui/questions*.jsonl, those
   on no removed page) with some asked again, shuffled by the seed. Each question is judged by
   the retriever's confidence rule (retrieve/confidence.py) and logged as an answer would be;
   askers thumb down an answer to a planted question the rule let through with probability
   P_DOWN_PLANTED and an ordinary answer with P_DOWN_ORDINARY (some users are never pleased).
3. The report (`dgrag.workflows.gaps.gap_report`) at each threshold of --sweep (dev) or at the
   module's LINK_COSINE: a planted gap is found when more than half of a reported cluster's
   questions are its own; a reported cluster is spurious when less than half of its questions
   are planted ones (of any gap).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from dgrag.config import Settings  # noqa: E402
from dgrag.retrieve.retriever import Retriever  # noqa: E402
from dgrag.store import Store  # noqa: E402
from dgrag.workflows import gaps  # noqa: E402

PLANTED = json.loads((HERE / "gaps" / "questions.json").read_text(encoding="utf-8"))
ORDINARY_FILES = [ROOT / "bench" / "arkui" / "questions.jsonl", ROOT / "bench" / "arkui" / "questions_v2.jsonl"]
ORDINARY = 215
REPEATS = 20
P_DOWN_PLANTED = 0.5
P_DOWN_ORDINARY = 0.04
SEEDS = {"dev": 1, "test": 2}
TREES = ("en", "zh-cn")


def removed_pages() -> list[str]:
    return sorted(f"{t}/{p}" for split in ("dev", "test") for g in PLANTED[split]["removed"].values()
                  for p in g["pages"] for t in TREES)


def remove_pages(store: Store, paths: list[str]) -> int:
    """The pages' nodes out of the index, as `dgrag index` removes a deleted file."""
    gone = 0
    for path in paths:
        with store.transaction():
            old = store.nodes.of_file(path)
            if not old:
                continue
            store.nodes.delete([r for r, _ in old.values()])
            for rowid in store.nodes.unreferenced_images():
                store.nodes.delete([rowid])
            store.logs.forget_file(path)
        gone += 1
    return gone


def reduced_index(source: Path, work: Path) -> Path:
    dest = work / "gaps_index.db"
    if not dest.exists():
        tmp = work / "gaps_index.tmp.db"
        tmp.unlink(missing_ok=True)
        with Store(source, readonly=True) as st:
            st.copy_to(tmp, compact=False)
        with Store(tmp) as st:
            n = remove_pages(st, removed_pages())
        print(f"index: {source} less {n} pages -> {dest}", file=sys.stderr)
        tmp.rename(dest)
    return dest


def ordinary_pool() -> list[dict]:
    gone = {p for p in removed_pages()}
    out = []
    for f in ORDINARY_FILES:
        for line in f.read_text(encoding="utf-8").splitlines():
            q = json.loads(line)
            if not gone & set(q.get("gold_paths", [])):
                out.append({"question": q["question"], "label": "ordinary", "lang": q.get("lang", "")})
    return out


def plan(split: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    items = [{"question": q, "label": f"gap:{topic}"} for topic, qs in PLANTED[split]["gaps"].items() for q in qs]
    items += [{"question": q, "label": f"removed:{name}"} for name, g in PLANTED[split]["removed"].items()
              for q in g["questions"]]
    pool = ordinary_pool()
    ordinary = rng.sample(pool, min(ORDINARY, len(pool)))
    items += ordinary + [dict(x) for x in rng.sample(ordinary, REPEATS)]
    rng.shuffle(items)
    return items


def write_log(db: Path, items: list[dict], seed: int) -> dict[str, str]:
    """Judge and log every question; returns answer id -> label."""
    rng = random.Random(seed * 7919)
    retriever = Retriever(Settings.from_env(db_path=db, request_timeout_s=3600.0))
    start = datetime(2026, 5, 1, tzinfo=timezone.utc)
    labels, flagged = {}, {"rule": 0, "thumbs": 0}
    with Store(db) as st:
        sections = gaps.Sections(st)
        for i, it in enumerate(items):
            answerable, confidence, _ = retriever.judge(it["question"])
            qv = retriever.embedder.embed_queries([it["question"]])[0]
            near = [s["id"] for s in sections.nearest(qv, 5)]
            aid = f"bench-{seed}-{i:04d}"
            when = (start + timedelta(minutes=47 * i)).isoformat(timespec="seconds")
            lang = "zh" if any("\u4e00" <= c <= "\u9fff" for c in it["question"]) else "en"
            st.asked.record_answer(aid, channel="bench", question=it["question"], language=lang, sections=near,
                                   confidence=confidence, unanswered=not answerable, asked_at=when)
            planted = it["label"] != "ordinary"
            down = rng.random() < (P_DOWN_PLANTED if planted else P_DOWN_ORDINARY)
            if answerable and down:
                st.asked.record_feedback(aid, -1, "not what I asked" if planted else "", "bench")
            if planted:
                key = "rule" if not answerable else ("thumbs" if down else "missed")
                flagged[key] = flagged.get(key, 0) + 1
            labels[aid] = it["label"]
    print(f"logged {len(items)} questions; planted ones flagged by the confidence rule {flagged['rule']}, "
          f"by a thumbs-down {flagged['thumbs']}, neither {flagged.get('missed', 0)}", file=sys.stderr)
    return labels


class Remembered:
    """The embedder with each text's vector kept: a sweep embeds the log once, not per threshold."""

    def __init__(self, inner):
        self.inner, self.model_id, self.dim, self._seen = inner, inner.model_id, inner.dim, {}

    def embed_queries(self, texts):
        new = [t for t in dict.fromkeys(texts) if t not in self._seen]
        if new:
            self._seen.update(zip(new, self.inner.embed_queries(new)))
        return np.stack([self._seen[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def score(report: gaps.GapReport, labels: dict[str, str]) -> dict:
    """Found: a planted gap that is more than half of some reported cluster's questions.
    Spurious: a reported cluster less than half of whose questions are planted (any gap's)."""
    planted = sorted({v for v in labels.values() if v != "ordinary"})
    found, spurious, clusters = set(), 0, []
    for c in report.gaps:
        tags = [labels.get(i, "?") for i in c["answer_ids"]]
        top = max(sorted(set(tags)), key=tags.count)
        share = tags.count(top) / len(tags)
        planted_share = sum(t != "ordinary" for t in tags) / len(tags)
        if top != "ordinary" and share > 0.5:
            found.add(top)
        if planted_share < 0.5:
            spurious += 1
        clusters.append({"count": c["count"], "label": top if share > 0.5 else "mixed", "share": round(share, 2),
                         "planted_share": round(planted_share, 2), "example": c["examples"][0],
                         "lacking": c["lacking"][:5]})
    n = len(report.gaps)
    failed = [labels.get(i, "?") for c in report.gaps for i in c["answer_ids"]] + [
        labels.get(o["answer_id"], "?") for o in report.one_offs]
    # a planted gap with fewer than two failed questions cannot be a cluster, whatever the threshold
    detectable = sorted(g for g in planted if failed.count(g) >= 2)
    return {"planted": len(planted), "found": len(found), "recall": round(len(found) / len(planted), 3),
            "detectable": len(detectable), "undetectable": sorted(set(planted) - set(detectable)),
            "clusters": n, "spurious": spurious, "spurious_share": round(spurious / n, 3) if n else 0.0,
            "missed": sorted(set(planted) - found), "answered_pct": report.answered_pct,
            "asked": report.asked, "failed": report.failed, "cluster_list": clusters}


def run_split(split: str, index: Path, work: Path, sweep: list[float], seed: int) -> dict:
    db = work / f"gaps_{split}_seed{seed}.db"
    labels_file = db.with_suffix(".labels.json")
    if not db.exists() or not labels_file.exists():
        db.unlink(missing_ok=True)
        with Store(index, readonly=True) as st:
            st.copy_to(db, compact=False)
        labels = write_log(db, plan(split, seed), seed)
        labels_file.write_text(json.dumps(labels, indent=0), encoding="utf-8")
    labels = json.loads(labels_file.read_text(encoding="utf-8"))
    out = {"split": split, "seed": seed, "db": str(db), "by_threshold": {}}
    with Store(db, readonly=True) as st:
        from dgrag.backends.embedder_choice import embedder_for_store

        emb = Remembered(embedder_for_store(Settings.from_env(db_path=db), st))
        for t in sweep:
            t0 = time.perf_counter()
            rep = gaps.gap_report(st, emb, threshold=t, translations=False)
            s = score(rep, labels)
            s["seconds"] = round(time.perf_counter() - t0, 2)
            out["by_threshold"][f"{t:.2f}"] = s
            print(f"{split} t={t:.2f}: found {s['found']}/{s['planted']} planted gaps ({s['detectable']} with 2+ "
                  f"failed questions), {s['clusters']} clusters, "
                  f"{s['spurious']} spurious ({s['spurious_share']:.0%}); answered {s['answered_pct']}%; "
                  f"{s['seconds']} s", file=sys.stderr)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, required=True, help="a full ArkUI-X index (not written)")
    ap.add_argument("--work", type=Path, required=True, help="a folder for the reduced index and the logs")
    ap.add_argument("--split", choices=["dev", "test", "both"], default="both")
    ap.add_argument("--seed", type=int, help="the log's seed (default: dev 1, test 2)")
    ap.add_argument("--sweep", help="thresholds to try, e.g. 0.84:0.95:0.01 (default: LINK_COSINE only)")
    ap.add_argument("--raw", action="store_true",
                    help="cluster on raw cosines, not centred on the off-domain questions' mean (the comparison)")
    ap.add_argument("--no-offset", action="store_true", help="no language offset (centred cosines alone)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    if args.no_offset:
        gaps.language_offset = lambda vectors, languages: 0.0
    if args.raw:  # a zero centre (centred() only normalises) and no language offset: the plain cosine
        gaps.centre_of = lambda embedder: np.zeros(embedder.dim, np.float32)
        gaps.language_offset = lambda vectors, languages: 0.0
    args.work.mkdir(parents=True, exist_ok=True)
    if args.sweep:
        a, b, step = (float(x) for x in args.sweep.split(":"))
        sweep = [round(a + i * step, 4) for i in range(int(round((b - a) / step)) + 1)]
    else:
        sweep = [gaps.LINK_COSINE]
    index = reduced_index(args.source, args.work)
    splits = ["dev", "test"] if args.split == "both" else [args.split]
    results = [run_split(s, index, args.work, sweep, args.seed or SEEDS[s]) for s in splits]
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
