"""What was asked and what the askers said of the answers (`asked`, `feedback`; migration 0009).
Functions over one connection. These rows are not part of the graph: each write is its own short
transaction that leaves the graph version alone, so logging a question never invalidates the
persisted graph snapshot."""
from __future__ import annotations

import json

from .connect import now

__all__ = ["record_answer", "answer", "record_feedback", "feedback_for", "asked_since", "prune", "counts"]

COLUMNS = ("id", "asked_at", "channel", "question", "language", "sections", "confidence", "unanswered",
           "answer", "index_state")


def _write(con, sql: str, params: tuple) -> None:
    """A write of its own; callers on worker threads hold Store.write_lock (the connection is shared)."""
    if con.in_transaction:
        con.execute(sql, params)
        return
    con.execute("BEGIN IMMEDIATE")
    try:
        con.execute(sql, params)
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def record_answer(con, answer_id: str, *, channel: str, question: str, language: str = "",
                  sections: list[str] | tuple[str, ...] = (), confidence: float | None = None,
                  unanswered: bool = False, answer_text: str = "", index_state: str = "",
                  asked_at: str | None = None) -> None:
    """One answer given; a second record of the same id keeps the first (ids are unique per answer)."""
    _write(con, "INSERT OR IGNORE INTO asked(id, asked_at, channel, question, language, sections, confidence, "
                "unanswered, answer, index_state) VALUES (?,?,?,?,?,?,?,?,?,?)",
           (answer_id, asked_at or now(), channel, question, language, json.dumps(list(sections)),
            confidence, int(bool(unanswered)), answer_text, index_state))


def _row(values) -> dict:
    row = dict(zip(COLUMNS, values))
    row["sections"] = json.loads(row["sections"] or "[]")
    row["unanswered"] = bool(row["unanswered"])
    return row


def answer(con, answer_id: str) -> dict | None:
    got = con.execute(f"SELECT {', '.join(COLUMNS)} FROM asked WHERE id=?", (answer_id,)).fetchone()
    return _row(got) if got else None


def record_feedback(con, answer_id: str, rating: int, comment: str = "", channel: str = "") -> int:
    """A verdict on one answer; returns its row id."""
    if rating not in (-1, 0, 1):
        raise ValueError(f"rating must be -1, 0 or 1, not {rating!r}")
    _write(con, "INSERT INTO feedback(answer_id, given_at, rating, comment, channel) VALUES (?,?,?,?,?)",
           (answer_id, now(), rating, comment, channel))
    return int(con.execute("SELECT max(id) FROM feedback WHERE answer_id=?", (answer_id,)).fetchone()[0])


def feedback_for(con, answer_id: str) -> list[dict]:
    rows = con.execute("SELECT given_at, rating, comment, channel FROM feedback WHERE answer_id=? ORDER BY id",
                       (answer_id,)).fetchall()
    return [dict(zip(("given_at", "rating", "comment", "channel"), r)) for r in rows]


def asked_since(con, since: str = "") -> list[dict]:
    """Every logged answer asked at or after `since` (ISO; '' for all), oldest first, each with its
    feedback: `rating` (the sum of its thumbs, 0 without any) and `comments`."""
    rows = con.execute(
        f"SELECT {', '.join('a.' + c for c in COLUMNS)}, coalesce(sum(f.rating), 0), "
        "group_concat(nullif(f.comment, ''), char(10)) FROM asked a LEFT JOIN feedback f ON f.answer_id = a.id "
        "WHERE a.asked_at >= ? GROUP BY a.id ORDER BY a.asked_at, a.id", (since,)).fetchall()
    out = []
    for values in rows:
        row = _row(values[:len(COLUMNS)])
        row["rating"] = int(values[-2])
        row["comments"] = values[-1].split("\n") if values[-1] else []
        out.append(row)
    return out


def prune(con, before: str) -> int:
    """Forget the answers asked before `before` (ISO) and the feedback on them: the retention period."""
    n = con.execute("SELECT count(*) FROM asked WHERE asked_at < ?", (before,)).fetchone()[0]
    _write(con, "DELETE FROM feedback WHERE answer_id IN (SELECT id FROM asked WHERE asked_at < ?) "
                "OR (given_at < ? AND answer_id NOT IN (SELECT id FROM asked))", (before, before))
    _write(con, "DELETE FROM asked WHERE asked_at < ?", (before,))
    return int(n)


def counts(con) -> dict[str, int]:
    asked = con.execute("SELECT count(*) FROM asked").fetchone()[0]
    feedback = con.execute("SELECT count(*) FROM feedback").fetchone()[0]
    return {"asked": int(asked), "feedback": int(feedback)}
