"""The question log and feedback on a live app (127.0.0.1, real index files): every channel's
answer logged once with its id, POST /feedback stored and read back from the file, an unknown id
a 404, logging off still storing the answer feedback names, a side file for the log, the
retention period, the widget's CORS (allowed origin, preflight, refused origin) and the rate
limit on /feedback."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx2
import pytest
from app_server import app_settings
from live_clients import call, start_served

from dgrag.store import Store

QUESTION = "How do I create an application with ACE Tools?"
SITE = "http://127.0.0.1:9"  # a docs site's origin (nothing listens: the browser is not needed here)


@pytest.fixture
def live(tmp_path, fixture_index):
    app, indexes = start_served(app_settings(tmp_path, fixture_index, widget_origins=SITE))
    yield app
    app.stop()


def _post(url: str, path: str, body: dict, **headers) -> httpx2.Response:
    return httpx2.post(url + path, json=body, headers=headers, timeout=120)


def _logged(service) -> dict[str, dict]:
    service.log.flush()
    with Store(service.log.path, readonly=True) as st:
        return {row["id"]: row for row in st.asked.asked_since("")}


def _stream_done(url: str, body: dict, **headers) -> dict:
    r = _post(url, "/chat/stream", body, **headers)
    assert r.status_code == 200, r.text
    events = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    return next(e for e in events if e["type"] == "done")


def test_every_channel_logs_its_answer_once_and_feedback_reads_back_from_the_index_file(live, capsys):
    rest = _post(live.url, "/chat", {"query": QUESTION, "use_llm": False}).json()
    widget = _stream_done(live.url, {"query": "ACE Tools 怎么创建应用？"}, **{"X-Dgrag-Channel": "widget"})
    v1 = _post(live.url, "/v1/chat/completions", {"model": "app", "use_llm": False,
                                                   "messages": [{"role": "user", "content": QUESTION}]}).json()
    mcp = call(live.url, "ask", {"question": QUESTION}).structured_content
    ids = {"rest": rest["answer_id"], "widget": widget["answer_id"], "v1": v1["id"], "mcp": mcp["answer_id"]}
    assert widget["meta"]["answer_id"] == ids["widget"] and v1["id"].startswith("chatcmpl-")
    assert live.service.log.path == live.service.settings.db_path  # a writable index keeps its own log

    rows = _logged(live.service)
    assert {ch: rows[i]["channel"] for ch, i in ids.items()} == {ch: ch for ch in ids}
    row = rows[ids["widget"]]
    assert row["question"] == "ACE Tools 怎么创建应用？" and row["language"] == "zh"
    assert row["sections"][0] == widget["meta"]["references"][0]["id"] and row["sections"][0].startswith("chunk")
    assert row["confidence"] == pytest.approx(widget["confidence"]) and row["unanswered"] is False
    assert row["answer"] == widget["llm_response"]
    assert json.loads(row["index_state"]) == widget["meta"]["docs_version"] and row["index_state"] != "{}"

    for channel, rating, comment in (("rest", -1, "wrong page"), ("v1", 1, ""), ("mcp", 0, "needs an example")):
        r = _post(live.url, "/feedback", {"answer_id": ids[channel], "rating": rating, "comment": comment})
        assert r.status_code == 200 and r.json()["index"] == "app" and r.json()["feedback_id"] > 0
    rows = _logged(live.service)
    assert (rows[ids["rest"]]["rating"], rows[ids["rest"]]["comments"]) == (-1, ["wrong page"])
    assert rows[ids["v1"]]["rating"] == 1 and rows[ids["mcp"]]["comments"] == ["needs an example"]
    assert rows[ids["widget"]]["rating"] == 0  # none given

    from dgrag.cli import main  # `dgrag gaps` reads the same tables: REST's thumbs down is a failed question

    capsys.readouterr()
    assert main(["gaps", "--db", str(live.service.settings.db_path), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    failed = [o for o in report["one_offs"]] + [g for g in report["gaps"]]
    assert any(o.get("answer_id") == ids["rest"] or ids["rest"] in o.get("answer_ids", []) for o in failed)


def test_bad_feedback_is_refused_and_nothing_is_stored(live):
    r = _post(live.url, "/feedback", {"answer_id": "ans-000000000000000000000000", "rating": 1})
    assert r.status_code == 404 and r.json()["type"] == "UnknownAnswer"
    answer_id = _post(live.url, "/chat", {"query": QUESTION, "use_llm": False}).json()["answer_id"]
    for body in ({"answer_id": answer_id, "rating": 2}, {"answer_id": "../etc", "rating": 1},
                 {"answer_id": answer_id, "rating": 1, "comment": "x" * 2001}, {"rating": 1}):
        r = _post(live.url, "/feedback", body)
        assert r.status_code == 422, body
    live.service.log.flush()
    with Store(live.service.settings.db_path, readonly=True) as st:
        assert st.asked.counts()["feedback"] == 0


def test_logging_off_keeps_no_question_but_feedback_stores_the_answer_it_names(tmp_path, fixture_index):
    app, _ = start_served(app_settings(tmp_path, fixture_index, log_questions=False))
    try:
        ids = [_post(app.url, "/chat", {"query": q, "use_llm": False}).json()["answer_id"]
               for q in (QUESTION, "What does ace check do?")]
        assert _logged(app.service) == {}
        r = _post(app.url, "/feedback", {"answer_id": ids[1], "rating": -1, "comment": "outdated"})
        assert r.status_code == 200
        rows = _logged(app.service)
        assert list(rows) == [ids[1]] and rows[ids[1]]["question"] == "What does ace check do?"
        assert rows[ids[1]]["rating"] == -1 and rows[ids[1]]["sections"]
    finally:
        app.stop()


def test_the_log_goes_to_log_db_and_the_retention_period_prunes_it(tmp_path, fixture_index, capsys, monkeypatch):
    from dgrag.cli import main

    side = tmp_path / "questions.db"
    app, _ = start_served(app_settings(tmp_path, fixture_index, log_db=str(side), log_retention_days=30))
    try:
        answer_id = _post(app.url, "/chat", {"query": QUESTION, "use_llm": False}).json()["answer_id"]
        assert _post(app.url, "/feedback", {"answer_id": answer_id, "rating": 1}).status_code == 200
        assert list(_logged(app.service)) == [answer_id] and app.service.log.path == side
        with Store(app.service.settings.db_path, readonly=True) as st:
            assert st.asked.counts() == {"asked": 0, "feedback": 0}  # the index file is left alone
        old = (datetime.now(timezone.utc) - timedelta(days=31)).isoformat(timespec="seconds")
        with Store(side) as st:
            st.asked.record_answer("ans-old", channel="rest", question="old", asked_at=old)
            st.asked.record_feedback("ans-old", -1)
        app.service.log.start()  # as at the server's start
        assert list(_logged(app.service)) == [answer_id]
        capsys.readouterr()  # `dgrag gaps` finds the side file (DGRAG_LOG_DB) beside the index
        monkeypatch.setenv("DGRAG_LOG_DB", str(side))
        assert main(["gaps", "--db", str(app.service.settings.db_path), "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["asked"] == 1
        health = httpx2.get(app.url + "/health").json()["question_log"]
        assert health["file"] == str(side) and health["retention_days"] == 30 and health["log_questions"]
    finally:
        app.stop()


def test_the_widget_is_served_and_only_allowed_origins_may_call(live):
    js = httpx2.get(live.url + "/widget.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert len(js.content) < 25_000 and b"/chat/stream" in js.content  # small: plain JS, no framework

    pre = httpx2.options(live.url + "/chat/stream", headers={
        "Origin": SITE, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
    assert pre.status_code == 204 and pre.headers["access-control-allow-origin"] == SITE
    assert "x-dgrag-channel" in pre.headers["access-control-allow-headers"]
    done = _stream_done(live.url, {"query": QUESTION}, Origin=SITE, **{"X-Dgrag-Channel": "widget"})
    assert done["answer_id"]

    other = "http://127.0.0.1:1"
    pre = httpx2.options(live.url + "/chat/stream", headers={"Origin": other, "Access-Control-Request-Method": "POST"})
    assert pre.status_code == 403 and "access-control-allow-origin" not in pre.headers
    before = len(_logged(live.service))
    r = _post(live.url, "/chat/stream", {"query": QUESTION}, Origin=other)
    assert r.status_code == 403 and r.json()["type"] == "OriginNotAllowed"
    r = _post(live.url, "/feedback", {"answer_id": done["answer_id"], "rating": 1}, Origin=other)
    assert r.status_code == 403
    assert len(_logged(live.service)) == before  # refused before any work
    host = live.url.removeprefix("http://")
    assert _post(live.url, "/feedback", {"answer_id": done["answer_id"], "rating": 1},
                 Origin=live.url, Host=host).status_code == 200  # the app's own pages


def test_feedback_counts_against_the_rate_limit_with_cors_on_the_refusal(tmp_path, fixture_index):
    app, _ = start_served(app_settings(tmp_path, fixture_index, rate_limit="3/minute", widget_origins="*"))
    try:
        answer_id = _post(app.url, "/chat", {"query": QUESTION, "use_llm": False}).json()["answer_id"]
        codes = [_post(app.url, "/feedback", {"answer_id": answer_id, "rating": 1}, Origin=SITE) for _ in range(3)]
        assert [r.status_code for r in codes] == [200, 200, 429]
        assert codes[-1].headers["access-control-allow-origin"] == SITE and codes[-1].headers["retry-after"]
    finally:
        app.stop()


def test_several_indexes_each_keep_their_own_log_and_feedback_finds_the_one(tmp_path, embedder):
    from live_clients import two_indexes

    from dgrag.config import Settings

    folder, en, zh = two_indexes(tmp_path, Path(__file__).resolve().parent / "fixtures" / "docs", embedder)
    app, indexes = start_served(Settings(db_path=folder, log_db=str(tmp_path / "q.db")))
    try:
        asked = {name: _post(app.url, "/chat", {"query": QUESTION, "index": name, "use_llm": False}).json()["answer_id"]
                 for name in ("en", "zh")}
        for name, answer_id in asked.items():
            r = _post(app.url, "/feedback", {"answer_id": answer_id, "rating": -1})
            assert r.status_code == 200 and r.json()["index"] == name
        assert indexes.get("en").log.path == tmp_path / "q.db" and indexes.get("zh").log.path == tmp_path / "q-zh.db"
        for name in ("en", "zh"):
            assert [(r["id"], r["rating"]) for r in _logged(indexes.get(name)).values()] == [(asked[name], -1)]
    finally:
        app.stop()
