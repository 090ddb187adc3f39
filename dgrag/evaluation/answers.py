"""Answers measured against gold answers (`dgrag eval Q.jsonl --answers`), per method, beside Recall@k.

Gold answers are a question's `answers` list (MuSiQue's gold JSONL: the answer and its aliases),
or `answer` plus `answer_aliases` (MuSiQue's own format); questions without one are skipped.
Strings are compared after SQuAD's normalisation (lower case, no punctuation, no articles, one
space), CJK characters each a token.

* Offline (no LLM configured): answer recall -- the share of questions whose gold answer (any
  alias) appears, as whole words, in the retrieved context: AR@k in the text of the first k
  passages, beside R@k of the same retrieval, and AR(ctx) in the whole context the chat model
  would be given (the agent's token budget applied). Rounds are 1; tokens are that context's.
* With an LLM: each question is also answered by the agent (its search rounds, then the short
  answer style): exact match and token F1 against the best alias, answer recall in everything
  its searches found, and the rounds and tokens (estimated prompt + completion) it used.
"""
from __future__ import annotations

import re
import statistics
import string
from collections import Counter
from pathlib import Path

from ..config import Settings
from ..kernels.tokens import IDEOGRAPHS
from .recall import gold_of, load_questions, recall_at

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_TOKEN = re.compile(f"[{IDEOGRAPHS}]|[^\\s{IDEOGRAPHS}]+")
_PUNCT = set(string.punctuation) | set("，。、；：？！“”‘’（）《》【】")


def normalize(text: str) -> str:
    text = "".join(" " if ch in _PUNCT else ch for ch in (text or "").lower())
    return " ".join(_TOKEN.findall(_ARTICLES.sub(" ", text)))


def gold_answers(q: dict) -> list[str]:
    if isinstance(q.get("answers"), list):
        out = q["answers"]
    else:
        out = [q.get("answer")] + list(q.get("answer_aliases") or [])
    return [a for a in dict.fromkeys(str(x) for x in out if x not in (None, "")) if normalize(a)]


def exact_match(prediction: str, golds: list[str]) -> float:
    return float(any(normalize(prediction) == normalize(g) for g in golds))


def token_f1(prediction: str, golds: list[str]) -> float:
    pred = normalize(prediction).split()
    best = 0.0
    for g in golds:
        gold = normalize(g).split()
        common = sum((Counter(pred) & Counter(gold)).values())
        if common:
            p, r = common / len(pred), common / len(gold)
            best = max(best, 2 * p * r / (p + r))
    return best


def contains_answer(text: str, golds: list[str]) -> bool:
    """A gold answer (any alias) in the text, as whole normalised words."""
    hay = f" {normalize(text)} "
    return any(f" {normalize(g)} " in hay for g in golds)


def evaluate_answers(settings: Settings, questions_path: Path, methods: list[str], ks: list[int],
                     overrides: dict | None = None, limit: int | None = None, retriever=None,
                     split: str | None = None, llm="auto") -> dict:
    """Per method: R@k and AR@k of one retrieval, AR(ctx), and, with an LLM, the agent's EM / F1."""
    from ..backends.chat import chat_llm
    from ..retrieve.retriever import Retriever

    questions = [q for q in load_questions(questions_path, limit, split) if gold_answers(q)]
    retriever = retriever or Retriever(settings)
    llm = chat_llm(settings) if llm == "auto" else llm
    report = {"n": len(questions), "llm": llm is not None, "ks": ks, "methods": {}, "per_question": {}}
    for method in methods:
        cfg = {**(overrides or {}), "method": method, "final_chunk_k": max(max(ks), 10)}
        rows = [_score(settings, retriever, llm, q, cfg, ks) for q in questions]
        report["methods"][method] = _summary(rows, ks)
        report["per_question"][method] = rows
    return report


def _score(settings: Settings, retriever, llm, q: dict, cfg: dict, ks: list[int]) -> dict:
    from ..answer import Answerer, ContextBook

    golds = gold_answers(q)
    found = retriever.search(q["question"], cfg)
    res = found.to_api()
    key, gold = gold_of(q)
    book = ContextBook(settings.chat_context_tokens)
    book.add(found, 1)
    row = {"id": q.get("id"), "recall": {str(k): recall_at(res["chunks"], key, gold, k) for k in ks},
           "answer_recall": {str(k): float(contains_answer("\n".join(c.get("text", "") for c in res["chunks"][:k]),
                                                           golds)) for k in ks},
           "answer_recall_context": float(contains_answer(book.context_text(), golds)),
           "rounds": 1, "tokens": book.tokens()}
    if llm is None:
        return row
    events = list(Answerer(settings, retriever, llm=llm, style="short").chat(q["question"], retrieval_config=cfg))
    done = events[-1]
    prediction = done["answer"].strip().splitlines()[0] if done["answer"].strip() else ""
    found = "\n".join(it.text for e in events if e["type"] == "retrieval"
                      for it in e["result"].all_references())
    meta = done.get("meta", {})
    row.update(prediction=prediction, em=exact_match(prediction, golds), f1=token_f1(prediction, golds),
               answer_recall_agent=float(contains_answer(found, golds)), rounds=meta.get("rounds", 0),
               tokens=meta.get("tokens", {}).get("total", 0))
    return row


def _summary(rows: list[dict], ks: list[int]) -> dict:
    def mean(values) -> float:
        values = list(values)
        return round(sum(values) / len(values), 4) if values else 0.0

    out = {"recall": {str(k): mean(r["recall"][str(k)] for r in rows) for k in ks},
           "answer_recall": {str(k): mean(r["answer_recall"][str(k)] for r in rows) for k in ks},
           "answer_recall_context": mean(r["answer_recall_context"] for r in rows),
           "rounds_mean": mean(r["rounds"] for r in rows),
           "tokens_mean": round(mean(r["tokens"] for r in rows), 1),
           "tokens_median": statistics.median([r["tokens"] for r in rows]) if rows else 0}
    if rows and "em" in rows[0]:
        out.update(em=mean(r["em"] for r in rows), f1=mean(r["f1"] for r in rows),
                   answer_recall_agent=mean(r["answer_recall_agent"] for r in rows))
    return out


def format_answers(report: dict) -> str:
    ks = report["ks"]
    llm = report["llm"]
    head = ("method      " + "".join(f"R@{k:<6}" for k in ks) + "".join(f"AR@{k:<6}" for k in ks) + "AR(ctx)  "
            + ("EM     F1     AR(agent)  " if llm else "") + "rounds  tokens/question")
    how = "answered by the agent" if llm else "offline: answer recall only (no LLM configured)"
    lines = [f"{report['n']} questions with gold answers, {how}", head]
    for m, r in report["methods"].items():
        row = "".join(f"{100 * r['recall'][str(k)]:<8.1f}" for k in ks)
        row += "".join(f"{100 * r['answer_recall'][str(k)]:<9.1f}" for k in ks)
        row += f"{100 * r['answer_recall_context']:<9.1f}"
        if llm:
            row += f"{100 * r['em']:<7.1f}{100 * r['f1']:<7.1f}{100 * r['answer_recall_agent']:<11.1f}"
        lines.append(f"{m:<12}{row}{r['rounds_mean']:<8.2f}{r['tokens_mean']:.0f}")
    lines.append("R@k: gold passages in the first k; AR@k: a gold answer (or alias) in their text; "
                 "AR(ctx): in the context the chat model is given" + ("; AR(agent): in all its searches found"
                                                                     if llm else ""))
    return "\n".join(lines)
