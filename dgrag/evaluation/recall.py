"""Recall@k of retrieval methods side by side, with latency per stage (`dgrag eval`)."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

from ..config import Settings
from ..errors import DgragError


def load_questions(path: Path, limit: int | None = None, split: str | None = None) -> list[dict]:
    """Questions of a JSONL file; `split` keeps those whose "split" field matches (dev / test)."""
    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
        except ValueError as exc:
            raise DgragError(f"{path}:{n}: not JSON: {exc}") from None
        if "question" not in q or not any(k in q for k in ("gold_corpus_idx", "gold_titles", "gold_paths")):
            raise DgragError(f"{path}:{n}: needs question and gold_corpus_idx | gold_titles | gold_paths")
        if split is None or q.get("split") == split:
            out.append(q)
    return out[:limit] if limit else out


def gold_of(q: dict) -> tuple[str, set]:
    for key in ("gold_corpus_idx", "gold_paths", "gold_titles"):
        if key in q:
            return key, set(q[key])
    raise DgragError("question without gold")


def hit_key(item: dict, key: str):
    if key == "gold_corpus_idx":
        return item.get("corpus_idx")
    if key == "gold_paths":
        return item.get("source_path")
    return item.get("breadcrumb", "").split(" / ")[0]


def section_recall_at(items: list[dict], q: dict, k: int) -> float | None:
    """Share of the gold sections (breadcrumbs on the gold pages) among the first k distinct
    sections retrieved; a sub-section counts for its parent. None without section gold."""
    gold = q.get("gold_sections")
    if not gold:
        return None
    pages = set(q.get("gold_paths", ()))
    seen: list[tuple[str, str]] = []
    for it in items:
        h = (it.get("source_path", ""), it.get("breadcrumb", ""))
        if h not in seen:
            seen.append(h)
    top = seen[:k]
    hits = sum(any((not pages or path in pages) and (bc == g or bc.startswith(g + " / ")) for path, bc in top)
               for g in gold)
    return hits / len(gold)


def recall_at(items: list[dict], key: str, gold: set, k: int) -> float:
    seen = []
    for it in items:
        h = hit_key(it, key)
        if h not in seen:
            seen.append(h)
    return len(gold & set(seen[:k])) / len(gold) if gold else 0.0


def evaluate(settings: Settings, questions_path: Path, methods: list[str], ks: list[int],
             overrides: dict | None = None, limit: int | None = None, retriever=None,
             split: str | None = None) -> dict:
    """Recall@k (page or passage gold; section gold too where the questions have it) and
    stage latencies per method, on one retriever, with per-question pairs against the first."""
    from ..retrieve.retriever import Retriever

    questions = load_questions(questions_path, limit, split)
    retriever = retriever or Retriever(settings)
    report = {"n": len(questions), "methods": {}, "per_question": {}}
    for method in methods:
        cfg = {**(overrides or {}), "method": method, "final_chunk_k": max(max(ks), 10)}
        report["methods"][method], report["per_question"][method] = _run_method(retriever, questions, cfg, ks)
    report["paired"] = _paired(report["per_question"], methods, ks)
    return report


def is_cross_page(q: dict) -> bool:
    """A question whose answer needs two pages or more (page gold only)."""
    return q.get("hops", 1) >= 2 and len(q.get("gold_paths", ())) >= 2


def _run_method(retriever, questions: list[dict], cfg: dict, ks: list[int]) -> tuple[dict, dict]:
    recalls: dict[str, list[float]] = {str(k): [] for k in ks}
    sections: dict[str, list[float]] = {str(k): [] for k in ks}
    both: dict[str, list[float]] = {str(k): [] for k in ks}  # cross-page: every gold page in the top k
    timings: dict[str, list[float]] = {}
    for q in questions:
        res = retriever.retrieve(q["question"], cfg)
        key, gold = gold_of(q)
        for k in ks:
            recalls[str(k)].append(recall_at(res["chunks"], key, gold, k))
            sec = section_recall_at(res["chunks"], q, k)
            if sec is not None:
                sections[str(k)].append(sec)
            if is_cross_page(q):
                both[str(k)].append(float(recall_at(res["chunks"], key, gold, k) == 1.0))
        for stage, s in res["timing"].items():
            timings.setdefault(stage, []).append(s * 1000)
    summary = {"recall": {k: round(sum(v) / len(v), 4) if v else 0.0 for k, v in recalls.items()},
               "latency_ms": {s: round(statistics.median(v), 2) for s, v in timings.items()}}
    if any(sections.values()):
        summary["section_recall"] = {k: round(sum(v) / len(v), 4) if v else 0.0 for k, v in sections.items()}
    if any(both.values()):
        summary["cross_page_both"] = {k: round(sum(v) / len(v), 4) for k, v in both.items()}
        summary["n_cross_page"] = len(both[str(ks[0])])
    return summary, recalls


def _paired(per_q: dict, methods: list[str], ks: list[int]) -> dict:
    """Questions better / worse / equal against the first method, per k (differences of a
    few points on 100 questions are noise; the pairing shows it)."""
    base = methods[0]
    out = {}
    for m in methods[1:]:
        out[f"{m}_vs_{base}"] = {}
        for k in ks:
            pairs = list(zip(per_q[m][str(k)], per_q[base][str(k)]))
            out[f"{m}_vs_{base}"][str(k)] = {"better": sum(a > b for a, b in pairs),
                                             "worse": sum(a < b for a, b in pairs),
                                             "equal": sum(a == b for a, b in pairs)}
    return out


def format_table(report: dict, ks: list[int]) -> str:
    head = "method      " + "".join(f"R@{k:<7}" for k in ks) + "  p50 ms (total)"
    lines = [f"{report['n']} questions", head]
    for m, r in report["methods"].items():
        row = "".join(f"{100 * r['recall'][str(k)]:<9.1f}" for k in ks)
        lines.append(f"{m:<12}{row}  {r['latency_ms'].get('rag_total', 0):.1f}")
        if "section_recall" in r:
            lines.append(f"{'  sections':<12}" + "".join(f"{100 * r['section_recall'][str(k)]:<9.1f}" for k in ks))
        if "cross_page_both" in r:
            lines.append(f"{'  both pages':<12}" + "".join(f"{100 * r['cross_page_both'][str(k)]:<9.1f}" for k in ks)
                         + f"  ({r['n_cross_page']} cross-page questions)")
    for name, d in report.get("paired", {}).items():
        lines.append(f"{name}: " + ", ".join(f"R@{k} +{v['better']}/-{v['worse']}/={v['equal']}" for k, v in d.items()))
    stages = next(iter(report["methods"].values()), {}).get("latency_ms", {})
    if stages:
        lines.append("median latency per stage (ms):")
        for m, r in report["methods"].items():
            lines.append(f"  {m:<10} " + ", ".join(f"{s}={v}" for s, v in r["latency_ms"].items()))
    return "\n".join(lines)
