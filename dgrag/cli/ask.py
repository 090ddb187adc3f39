"""Commands that ask the index: query (one question) and eval (Recall@k per method)."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import DgragError
from .common import require_index, retrieval_overrides, settings_for


def cmd_query(args) -> int:
    from ..answer import Answerer
    from ..answer.components import offline_answer
    from ..retrieve.retriever import Retriever

    settings = settings_for(args)
    require_index(settings.db_path)
    if not args.question.strip():
        raise DgragError("empty question")
    retriever = Retriever(settings)
    found = retriever.search(args.question, retrieval_overrides(args))
    result = found.to_api()
    agent = Answerer(settings, retriever, llm=None if args.no_llm else "auto")
    if agent.llm is None:  # the extractive answer, its "Read more" and its components
        text, meta = offline_answer(args.question, [found], retriever.embedder, retriever)
        result.update(answer=text, components=meta["components"])
    else:
        result["answer"] = agent.answer_once(args.question, found)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
        return 0
    print(result["answer"])
    if agent.llm is not None:
        print("\n---\n" + result["context"])
    print("\n" + json.dumps(result["timing"]))
    return 0


def cmd_eval(args) -> int:
    from ..evaluation.recall import evaluate, format_table

    settings = settings_for(args)
    require_index(settings.db_path)
    questions = Path(args.questions)
    if not questions.is_file():
        raise DgragError(f"no questions file at {questions}")
    if args.answers:  # answer evaluation: dgrag/evaluation/answers.py
        from ..evaluation.answers import evaluate_answers, format_answers

        report = evaluate_answers(settings, questions, args.methods, args.k, dict(args.config or {}),
                                  limit=args.limit, split=args.split)
        print(json.dumps(report, indent=2) if args.json else format_answers(report))
        return 0
    report = evaluate(settings, questions, args.methods, args.k, dict(args.config or {}), limit=args.limit,
                      split=args.split)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(format_table(report, args.k))
    return 0
