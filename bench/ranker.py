"""Fit the chunk ranking's weights (retrieve/ranking.py) on dev splits; report them on test.

    python -m bench.ranker dump --work DIR [--out F]     features of every candidate, every question
    python -m bench.ranker fit  --features F [--split dev]
    python -m bench.ranker show --features F --split test [--weights JSON]

`dump` runs the default method once per question on each index of `bench.retrieval`'s work
folder (mq_llm, mq_off, arkui_struct, arkui_off) with `verbose`, and keeps the candidates'
features and what each candidate is (page, section, passage). `fit` searches the weights by
coordinate ascent on the dev questions of every configuration at once (the sum of R@1, R@2,
R@5, section R@5 and cross-page both-pages R@5 over the configurations: one set of weights for every corpus, as the
default must be), less `GUARD` points for each point a configuration's R@1, R@2 or R@5 falls below
dense's, so a weight that only helps one corpus costs on the others. `show` prints
recall of dense (the base feature alone) and of the weights, per configuration and split.
MuSiQue-100 has no split of its own: every third question (0, 3, 6, ...) is dev (`bench.retrieval.split_of`).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from dgrag.config import RetrievalConfig, Settings
from dgrag.evaluation.recall import gold_of, is_cross_page, recall_at, section_recall_at
from dgrag.retrieve.ranking import FEATURES, interleave, order

from .retrieval import ARKUI_QUESTIONS, ARKUI_V2, questions_for

CONFIGS = {"mq_llm": ("mq_llm.db", "musique"), "mq_off": ("mq_off.db", "musique"),
           "arkui_struct": ("arkui_struct.db", "arkui"), "arkui_off": ("arkui_off.db", "arkui")}
# a weight of 0 leaves a feature's work (and its candidates) out: the dump turns every one on,
# the fit ranks from the features alone
EVERY_SOURCE = {f"rank_w_{f}": 1e-6 for f in FEATURES if f != "base"}
GRID = [0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]


def dump(work: Path, arkui_files: list[Path]) -> dict:
    from dgrag.retrieve.retriever import Retriever
    from dgrag.store import Store

    out = {}
    for name, (db, kind) in CONFIGS.items():
        path = work / db
        if not path.exists():
            continue
        retriever = Retriever(Settings.from_env(db_path=path))
        rows = []
        with Store(path, readonly=True) as st:
            for q in questions_for(kind, arkui_files):
                res = retriever.search(q["question"], {"verbose": True, **EVERY_SOURCE})
                rk = res.trace["stage3"]["ranking"]
                rowids = [int(r) for r in rk["nodes"]]
                nodes = {n["rowid"]: n for n in st.nodes.by_rowids(rowids)}
                items = [{"source_path": nodes[r]["source_path"], "breadcrumb": nodes[r]["breadcrumb"],
                          "corpus_idx": (nodes[r]["meta"] or {}).get("corpus_idx")} for r in rowids]
                rows.append({"q": q, "items": items, "F": rk["values"], "ppr_order": rk["ppr_order"],
                             "ppr_agreement": rk["ppr_agreement"]})
        out[name] = rows
        print(f"{name}: {len(rows)} questions", flush=True)
    return {"features": list(FEATURES), "configs": out}


def _ranked(row: dict, w: np.ndarray, cfg: RetrievalConfig = RetrievalConfig()) -> list[int]:
    """Candidate positions as the library ranks them: `order`, then PPR's places where dense
    agrees with the walk (`rank_ppr_agreement`; not for dense, the base feature alone)."""
    F = np.asarray(row["F"], dtype=np.float64)
    ranked = order(F, w).tolist() if len(F) else []
    dense = not np.any(w[1:])
    if dense or cfg.rank_ppr_every <= 0 or agreement_of(row) < cfg.rank_ppr_agreement:
        return ranked
    pairs = interleave([(i, 0.0) for i in ranked], row.get("ppr_order", []), cfg.rank_ppr_head, cfg.rank_ppr_every)
    return [i for i, _ in pairs]


def agreement_of(row: dict) -> float:
    """The share of the walk's best pages dense agrees with; a dump written before issue 36 kept
    it on the trust scale of then (0 up to a third, 1 from two thirds, linear between), whose
    0.5 is an agreement of one half: mapped back, with its rounding (1e-9) forgiven."""
    if "ppr_agreement" in row:
        return row["ppr_agreement"]
    trust = row.get("ppr_trust", 0.0)
    return 0.0 if trust <= 0 else 0.34 + 0.32 * trust + 1e-9


def _metrics(row: dict, w: np.ndarray) -> dict[str, float]:
    ranked = _ranked(row, w)
    items = [row["items"][i] for i in ranked[:10]]
    q = row["q"]
    key, gold = gold_of(q)
    m = {f"R@{k}": recall_at(items, key, gold, k) for k in (1, 2, 5, 10)}
    for k in (1, 5, 10):
        s = section_recall_at(items, q, k)
        if s is not None:
            m[f"S@{k}"] = s
    if is_cross_page(q):
        m["both@5"] = float(recall_at(items, key, gold, 5) == 1.0)
    return m


def summary(rows: list[dict], w: np.ndarray, split: str | None) -> dict[str, float]:
    acc: dict[str, list[float]] = {}
    for row in rows:
        if split and row["q"].get("split") != split:
            continue
        for k, v in _metrics(row, w).items():
            acc.setdefault(k, []).append(v)
    out = {k: 100 * float(np.mean(v)) for k, v in acc.items()}
    out["n"] = len(acc.get("R@1", []))
    out["n_cross"] = len(acc.get("both@5", []))
    return out


# each point a configuration's R@1, R@2 or R@5 falls below dense's on the fitting split costs
# GUARD points of the objective: the default must not lose to dense on any corpus, so a weight
# that buys one corpus's sections with another's second passage is refused
GUARD = 3.0


def objective(data: dict, w: np.ndarray, split: str, guard: float = GUARD) -> float:
    base = np.eye(len(FEATURES))[0]
    total = 0.0
    for rows in data["configs"].values():
        s = summary(rows, w, split)
        if not s["n"]:
            continue
        total += s["R@1"] + s["R@2"] + s["R@5"] + s.get("S@5", 0.0) + s.get("both@5", 0.0)
        if guard > 0:
            d = summary(rows, base, split)
            total -= guard * sum(max(0.0, d[k] - s[k]) for k in ("R@1", "R@2", "R@5"))
    return total


def fit(data: dict, split: str = "dev", passes: int = 3, guard: float = GUARD) -> np.ndarray:
    w = np.zeros(len(FEATURES))
    w[0] = 1.0  # the base weight fixes the scale
    best = objective(data, w, split, guard)
    for _ in range(passes):
        moved = False
        for j in range(1, len(FEATURES)):
            for v in GRID:
                trial = w.copy()
                trial[j] = v
                score = objective(data, trial, split, guard)
                if score > best + 1e-9:
                    best, w, moved = score, trial, True
        if not moved:
            break
    return w


def paired(rows: list[dict], w: np.ndarray, split: str | None, k: int) -> tuple[int, int, int]:
    base = np.eye(len(FEATURES))[0]
    b = wz = e = 0
    for row in rows:
        if split and row["q"].get("split") != split:
            continue
        a, d = _metrics(row, w)[f"R@{k}"], _metrics(row, base)[f"R@{k}"]
        b, wz, e = b + (a > d), wz + (a < d), e + (a == d)
    return b, wz, e


def table(data: dict, w: np.ndarray, splits=("dev", "test")) -> str:
    cols = ["R@1", "R@2", "R@5", "R@10", "S@1", "S@5", "S@10", "both@5"]
    lines = ["| configuration | split | n | ranking | " + " | ".join(cols) + " | vs dense R@1 / R@2 / R@5 |",
             "|" + "---|" * (len(cols) + 5)]
    base = np.eye(len(FEATURES))[0]
    for name, rows in data["configs"].items():
        for split in splits:
            for label, ww in (("dense", base), ("fitted", w)):
                s = summary(rows, ww, split)
                vals = " | ".join(f"{s[c]:.1f}" if c in s else "" for c in cols)
                vs = " / ".join("+%d/-%d/=%d" % paired(rows, ww, split, k) for k in (1, 2, 5)) if label != "dense" else ""
                lines.append(f"| {name} | {split} | {s['n']} ({s['n_cross']} cross) | {label} | {vals} | {vs} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--work", type=Path, required=True)
    d.add_argument("--out", type=Path)
    d.add_argument("--arkui", type=Path, action="append", help="ArkUI-X question files (default: the bench's)")
    for name in ("fit", "show"):
        p = sub.add_parser(name)
        p.add_argument("--features", type=Path, required=True)
        p.add_argument("--split", default="dev" if name == "fit" else None)
        p.add_argument("--weights", default=None, help="JSON {feature: weight} (default: RetrievalConfig's)")
        p.add_argument("--guard", type=float, default=GUARD, help="cost of a point below dense (fit)")
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        data = dump(args.work, args.arkui or [f for f in (ARKUI_QUESTIONS, ARKUI_V2) if f.exists()])
        (args.out or args.work / "ranker_features.json").write_text(json.dumps(data), encoding="utf-8")
        return
    data = json.loads(args.features.read_text(encoding="utf-8"))
    if args.cmd == "fit":
        w = fit(data, args.split, guard=args.guard)
        print(json.dumps({f"rank_w_{f}": float(v) for f, v in zip(FEATURES, w)}, indent=1))
        print(table(data, w))
        return
    cfg = RetrievalConfig()
    given = json.loads(args.weights) if args.weights else {}
    w = np.array([given.get(f, getattr(cfg, f"rank_w_{f}")) for f in FEATURES], dtype=np.float64)
    print(table(data, w, (args.split,) if args.split else ("dev", "test")))


if __name__ == "__main__":
    main()
