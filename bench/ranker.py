"""Fit the chunk ranking's weights (retrieve/ranking.py) on dev splits; report them on test.

    python -m bench.ranker dump --work DIR [--out F] [--configs a,b]   features of every candidate, every question
    python -m bench.ranker fit  --features F [--features F2 ...] [--free cols] [--graph-guard G]
    python -m bench.ranker cv   --features F [--features F2 ...] [--free cols] [--graph-guard G]
    python -m bench.ranker show --features F [--split test] [--weights JSON]

`dump` runs the default method once per question on each index of a work folder (`bench.retrieval`'s
mq_llm, mq_off, arkui_struct, arkui_off; `bench.sites`' redux, vitepress, rust-book) with
`verbose`, and keeps the candidates' features, what each candidate is (page, section, passage)
and `EXTRAS`, features the library does not compute, measured here first. `fit` searches the
weights by coordinate ascent on the dev questions of every configuration at once (the sum of
`GAINS` over the configurations: one set of weights for every corpus, as the default must be),
less `GUARD` points for each point a configuration falls below dense's on `GUARDED`, so a weight
that only helps one corpus costs on the others; `--graph-guard` also charges each point below
the same weights without the graph's features. `cv` leaves one corpus out at a time (`GROUP`):
each corpus is ranked by weights fitted on the other corpora's dev questions alone, so its
figures say how the procedure carries to docs nobody fitted on. `show` and both print dense,
the default, the no-graph ablation and the fitted weights per configuration and split.
MuSiQue-100 has no split of its own: every third question (0, 3, 6, ...) is dev (`bench.retrieval.split_of`).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from dgrag.config import GRAPH_WEIGHTS, RetrievalConfig, Settings
from dgrag.evaluation.recall import gold_of, is_cross_page, recall_at, section_recall_at
from dgrag.retrieve.ranking import FEATURES, interleave, order

from .retrieval import ARKUI_QUESTIONS, ARKUI_V2, questions_for
from .sites import SITES

CONFIGS = {"mq_llm": ("mq_llm.db", "musique"), "mq_off": ("mq_off.db", "musique"),
           "arkui_struct": ("arkui_struct.db", "arkui"), "arkui_off": ("arkui_off.db", "arkui"),
           **{site: (f"{site}.db", f"site:{site}") for site in SITES}}
# the corpus each configuration reads: cross-validation leaves one corpus out at a time, so that
# a weight is judged on a corpus none of its fitting questions came from
GROUP = {"mq_llm": "musique", "mq_off": "musique", "arkui_struct": "arkui", "arkui_off": "arkui",
         **{site: site for site in SITES}}
# features the ranking does not compute yet, measured here from the dump (`extras`) before one
# earns a place in the registry: the question's terms in the candidate's own heading and path
EXTRAS = ("heading_cover", "heading_share", "path_cover")
# a weight of 0 leaves a feature's work (and its candidates) out: the dump turns every one on,
# the fit ranks from the features alone
EVERY_SOURCE = {f"rank_w_{f}": 1e-6 for f in FEATURES if f != "base"}
GRID = [0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]


def dump(work: Path, arkui_files: list[Path], only: list[str] | None = None) -> dict:
    from dgrag.retrieve.retriever import Retriever
    from dgrag.store import Store

    out = {}
    for name, (db, kind) in CONFIGS.items():
        path = work / db
        if not path.exists() or (only and name not in only):
            continue
        retriever = Retriever(Settings.from_env(db_path=path))
        rows = []
        with Store(path, readonly=True) as st:
            for q in _questions(kind, arkui_files):
                res = retriever.search(q["question"], {"verbose": True, **EVERY_SOURCE})
                rk = res.trace["stage3"]["ranking"]
                rowids = [int(r) for r in rk["nodes"]]
                nodes = {n["rowid"]: n for n in st.nodes.by_rowids(rowids)}
                items = [{"source_path": nodes[r]["source_path"], "breadcrumb": nodes[r]["breadcrumb"],
                          "corpus_idx": (nodes[r]["meta"] or {}).get("corpus_idx")} for r in rowids]
                rows.append({"q": q, "items": items, "F": rk["values"], "ppr_order": rk["ppr_order"],
                             "ppr_agreement": rk["ppr_agreement"], "passage_pages": rk["passage_pages"],
                             "X": extras(retriever.handle.get(), q["question"], items)})
        out[name] = rows
        print(f"{name}: {len(rows)} questions", flush=True)
    return {"features": list(FEATURES), "configs": out}


def _questions(kind: str, arkui_files: list[Path]) -> list[dict]:
    if kind.startswith("site:"):
        path = Path(__file__).resolve().parent / "sites" / kind[5:] / "questions.jsonl"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return questions_for(kind, arkui_files)


def extras(li, question: str, items: list[dict]) -> list[list[float]]:
    """Per candidate, `EXTRAS`: the IDF share of the question's terms its own heading holds,
    the IDF share of its heading's terms the question holds, and the question's share its
    whole breadcrumb holds (each over the corpus's lexical index, `kernels.lexical`)."""
    _, index = li.lexical()
    df = np.diff(index.weights.indptr)
    idf = np.log1p((index.n_docs - df + 0.5) / (df + 0.5))
    q = index.term_ids(question)
    qw = float(idf[q].sum())
    out = []
    for it in items:
        crumb = it["breadcrumb"] or ""
        h, path = index.term_ids(crumb.split(" / ")[-1]), index.term_ids(crumb)
        hq = float(idf[np.intersect1d(h, q)].sum())
        hw = float(idf[h].sum())
        pq = float(idf[np.intersect1d(path, q)].sum())
        out.append([hq / qw if qw else 0.0, hq / hw if hw else 0.0, pq / qw if qw else 0.0])
    return out


NAMES = FEATURES + EXTRAS  # the columns the fit sees: the registry's, then the dump's extras
GRAPH = tuple(name[len("rank_w_"):] for name in GRAPH_WEIGHTS)  # what graph_features false turns off
DEFAULT = RetrievalConfig()
NO_GRAPH = RetrievalConfig(graph_features=False)  # no PPR places either


def weights(given: dict | None = None, cfg: RetrievalConfig = DEFAULT) -> np.ndarray:
    """A weight per `NAMES` column: RetrievalConfig's (`cfg`), the extras at 0, `given` over them."""
    given = given or {}
    return np.array([given.get(f, getattr(cfg, f"rank_w_{f}", 0.0)) for f in NAMES], dtype=np.float64)


DENSE = np.eye(len(NAMES))[0]  # the base feature alone: dense's order


def matrix(row: dict) -> np.ndarray:
    """The row's features and extras as one matrix, made once per row (the fit ranks it often)."""
    if "_M" not in row:
        F = np.asarray(row["F"], dtype=np.float64).reshape(len(row["items"]), len(FEATURES))
        X = np.asarray(row.get("X") or np.zeros((len(F), len(EXTRAS))), dtype=np.float64).reshape(len(F), len(EXTRAS))
        row["_M"] = np.hstack([F, X])
    return row["_M"]


def _ranked(row: dict, w: np.ndarray, cfg: RetrievalConfig = DEFAULT) -> list[int]:
    """Candidate positions as the library ranks them: `order`, then PPR's places where dense
    agrees with the walk (`rank_ppr_agreement`; not for dense, the base feature alone) in a
    passage corpus (`rank_ppr_in`; a dump from before that rule counts as one)."""
    F = matrix(row)
    ranked = order(F, w).tolist() if len(F) else []
    dense = not np.any(w[1:])
    eligible = cfg.rank_ppr_in == "any" or row.get("passage_pages", True)
    if dense or not eligible or cfg.rank_ppr_every <= 0 or agreement_of(row) < cfg.rank_ppr_agreement:
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


def without_graph(w: np.ndarray) -> np.ndarray:
    out = w.copy()
    out[[NAMES.index(f) for f in GRAPH]] = 0.0
    return out


def metrics_of(row: dict, order: list[int]) -> dict[str, float]:
    """One question's figures for a candidate order (positions in the row, best first)."""
    items = [row["items"][i] for i in order[:10]]
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


def _metrics(row: dict, w: np.ndarray, cfg: RetrievalConfig = DEFAULT) -> dict[str, float]:
    return metrics_of(row, _ranked(row, w, cfg))


def load(paths: list[Path]) -> dict:
    """Several dumps' configurations together, as one dump."""
    data = {"features": list(FEATURES), "configs": {}}
    for path in paths:
        data["configs"].update(json.loads(Path(path).read_text(encoding="utf-8"))["configs"])
    return data


def summary(rows: list[dict], w: np.ndarray, split: str | None, cfg: RetrievalConfig = DEFAULT) -> dict[str, float]:
    acc: dict[str, list[float]] = {}
    for row in rows:
        if split and row["q"].get("split") != split:
            continue
        for k, v in _metrics(row, w, cfg).items():
            acc.setdefault(k, []).append(v)
    out = {k: 100 * float(np.mean(v)) for k, v in acc.items()}
    out["n"] = len(acc.get("R@1", []))
    out["n_cross"] = len(acc.get("both@5", []))
    return out


# each point a configuration's R@1, R@2 or R@5 falls below dense's on the fitting split costs
# GUARD points of the objective: the default must not lose to dense on any corpus, so a weight
# that buys one corpus's sections with another's second passage is refused
GUARD = 3.0
GAINS = ("R@1", "R@2", "R@5", "S@1", "S@5", "both@5")  # what the objective sums
GUARDED = ("R@1", "R@2", "R@5", "S@1", "S@5")  # not below dense's (a corpus without sections: R@k only)


class Objective:
    """The fit's objective on one split of some configurations: the sum of `GAINS` over them, less
    `guard` points a point below dense on `GUARDED`, and `graph_guard` points a point below the
    same weights without the graph's features (the no-graph ablation). Dense's figures are
    computed once."""

    def __init__(self, data: dict, split: str, configs: list[str] | None = None, guard: float = GUARD,
                 graph_guard: float = 0.0):
        self.rows = {c: r for c, r in data["configs"].items() if configs is None or c in configs}
        self.split, self.guard, self.graph_guard = split, guard, graph_guard
        self.dense = {c: summary(r, DENSE, split) for c, r in self.rows.items()}
        self._no_graph: dict[tuple, dict] = {}  # a coordinate step on a graph weight leaves it as it was

    def no_graph(self, c: str, w: np.ndarray) -> dict:
        key = (c, tuple(without_graph(w)))
        if key not in self._no_graph:
            self._no_graph[key] = summary(self.rows[c], without_graph(w), self.split, NO_GRAPH)
        return self._no_graph[key]

    def __call__(self, w: np.ndarray) -> float:
        total = 0.0
        for c, rows in self.rows.items():
            s, d = summary(rows, w, self.split), self.dense[c]
            if not s["n"]:
                continue
            total += sum(s.get(k, 0.0) for k in GAINS)
            total -= self.guard * sum(max(0.0, d[k] - s[k]) for k in GUARDED if k in s)
            if self.graph_guard > 0 and np.any(without_graph(w) != w):
                g = self.no_graph(c, w)
                total -= self.graph_guard * sum(max(0.0, g[k] - s[k]) for k in GUARDED if k in s)
        return total


def fit(data: dict, split: str = "dev", passes: int = 3, guard: float = GUARD, graph_guard: float = 0.0,
        configs: list[str] | None = None, free: tuple[str, ...] = FEATURES[1:]) -> np.ndarray:
    """Coordinate ascent over `GRID` for the `free` columns, from dense (base 1, the rest 0)."""
    objective = Objective(data, split, configs, guard, graph_guard)
    w = DENSE.copy()  # the base weight fixes the scale
    best = objective(w)
    for _ in range(passes):
        moved = False
        for j in (NAMES.index(f) for f in free):
            for v in GRID:
                trial = w.copy()
                trial[j] = v
                score = objective(trial)
                if score > best + 1e-9:
                    best, w, moved = score, trial, True
        if not moved:
            break
    return w


def cross_validate(data: dict, guard: float = GUARD, graph_guard: float = 0.0,
                   free: tuple[str, ...] = FEATURES[1:]) -> dict[str, np.ndarray]:
    """Leave one corpus out: per corpus, the weights fitted on the dev splits of every other corpus."""
    present = [c for c in data["configs"] if c in GROUP]
    out = {}
    for held in sorted({GROUP[c] for c in present}):
        others = [c for c in present if GROUP[c] != held]
        out[held] = fit(data, "dev", guard=guard, graph_guard=graph_guard, configs=others, free=free)
        print(f"fitted without {held}: " + ", ".join(f"{n} {v:g}" for n, v in zip(NAMES, out[held]) if v), flush=True)
    return out


def paired(rows: list[dict], w: np.ndarray, split: str | None, k: int,
           cfg: RetrievalConfig = DEFAULT) -> tuple[int, int, int]:
    b = wz = e = 0
    for row in rows:
        if split and row["q"].get("split") != split:
            continue
        a, d = _metrics(row, w, cfg)[f"R@{k}"], _metrics(row, DENSE)[f"R@{k}"]
        b, wz, e = b + (a > d), wz + (a < d), e + (a == d)
    return b, wz, e


COLS = ["R@1", "R@2", "R@5", "R@10", "S@1", "S@5", "S@10", "both@5"]


def table(data: dict, rankings: dict, splits=("dev", "test")) -> str:
    """Per configuration and split, each ranking's figures; `rankings`: label -> weights, or
    label -> {configuration: weights} (cross-validation: each corpus its own)."""
    lines = ["| configuration | split | n | ranking | " + " | ".join(COLS) + " | vs dense R@1 / R@2 / R@5 |",
             "|" + "---|" * (len(COLS) + 5)]
    for name, rows in data["configs"].items():
        for split in splits:
            for label, ww in {"dense": DENSE, **rankings}.items():
                cfg = NO_GRAPH if label == "no graph" else DEFAULT
                ww = ww[GROUP.get(name, name)] if isinstance(ww, dict) else ww
                s = summary(rows, ww, split, cfg)
                vals = " | ".join(f"{s[c]:.1f}" if c in s else "" for c in COLS)
                vs = " / ".join("+%d/-%d/=%d" % paired(rows, ww, split, k, cfg) for k in (1, 2, 5)) if label != "dense" else ""
                lines.append(f"| {name} | {split} | {s['n']} ({s['n_cross']} cross) | {label} | {vals} | {vs} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--work", type=Path, required=True)
    d.add_argument("--out", type=Path)
    d.add_argument("--arkui", type=Path, action="append", help="ArkUI-X question files (default: the bench's)")
    d.add_argument("--configs", default="", help="comma-separated configurations (default: every index in WORK)")
    for name in ("fit", "cv", "show"):
        p = sub.add_parser(name)
        p.add_argument("--features", type=Path, required=True, action="append",
                       help="a dump (given again: the dumps' configurations together)")
        p.add_argument("--split", default=None, help="show: one split (default: dev and test)")
        p.add_argument("--weights", default=None, help="JSON {feature: weight} (default: RetrievalConfig's)")
        p.add_argument("--guard", type=float, default=GUARD, help="cost of a point below dense")
        p.add_argument("--graph-guard", type=float, default=0.0, help="cost of a point below the no-graph ablation")
        p.add_argument("--free", default=",".join(FEATURES[1:]), help="the columns the fit may move")
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        data = dump(args.work, args.arkui or [f for f in (ARKUI_QUESTIONS, ARKUI_V2) if f.exists()],
                    [c for c in args.configs.split(",") if c])
        (args.out or args.work / "ranker_features.json").write_text(json.dumps(data), encoding="utf-8")
        return
    data = load(args.features)
    free = tuple(args.free.split(","))
    unknown = set(free) - set(NAMES)
    if unknown:
        ap.error(f"unknown columns: {', '.join(sorted(unknown))} (known: {', '.join(NAMES)})")
    default = weights(json.loads(args.weights) if args.weights else None)
    rankings: dict = {"default": weights(), "no graph": without_graph(weights())}
    if args.cmd == "fit":
        w = fit(data, "dev", guard=args.guard, graph_guard=args.graph_guard, free=free)
        print(json.dumps({f: float(v) for f, v in zip(NAMES, w)}, indent=1))
        rankings["fitted"] = w
    elif args.cmd == "cv":
        rankings["cross-validated"] = cross_validate(data, args.guard, args.graph_guard, free)
    elif args.weights:
        rankings["given"] = default
    print(table(data, rankings, (args.split,) if args.split else ("dev", "test")))


if __name__ == "__main__":
    main()
