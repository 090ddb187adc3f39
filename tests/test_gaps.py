"""The gap report (workflows/gaps.py, `dgrag gaps`): a real index of the fixture excerpt, a real
question log written through store.asked, clustered with the packaged embedder."""
from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from dgrag.cli import main
from dgrag.errors import DgragError
from dgrag.store import Store
from dgrag.workflows.gaps import agglomerate, gap_report, language_offset, since_date, why_failed

BLUETOOTH = ["How do I scan for Bluetooth devices in my app?", "How can my app scan for nearby Bluetooth devices?",
             "Scanning for Bluetooth Low Energy devices: how do I do it?", "How to discover nearby Bluetooth devices?"]
PUSH = ["How do I send push notifications to my app?", "How can my app receive push notifications?",
        "Push notifications in my app: how do I set them up?"]
ANSWERED = ["How do I install ACE Tools?", "What does @Link do in two-way synchronization?",
            "How do I create a project with ace create?", "What is ArkUI-X?", "How do I run ace check?"]


def _log(db) -> dict[str, str]:
    """The log: each gap question unanswered (May), the answered ones (June), one thumbed down."""
    ids = {}
    with Store(db) as st:
        for i, q in enumerate(BLUETOOTH + PUSH):
            aid = f"gap-{i}"
            st.asked.record_answer(aid, channel="widget", question=q, language="en", confidence=0.2,
                                   unanswered=True, asked_at=f"2026-05-{i + 1:02d}T10:00:00+00:00")
            ids[q] = aid
        for i, q in enumerate(ANSWERED):
            aid = f"ok-{i}"
            st.asked.record_answer(aid, channel="chat", question=q, language="en", confidence=0.9,
                                   asked_at=f"2026-06-{i + 1:02d}T10:00:00+00:00")
            ids[q] = aid
        st.asked.record_feedback("ok-4", -1, "it told me nothing about ace check")
        st.asked.record_feedback("ok-0", 1)
    return ids


@pytest.fixture
def logged(indexed):
    _log(indexed.db_path)
    return indexed


def test_failed_means_unanswered_low_confidence_or_thumbs_down():
    assert why_failed({"unanswered": True, "confidence": 0.2, "rating": 0}) == ["unanswered"]
    assert why_failed({"unanswered": False, "confidence": 0.3, "rating": 0}) == ["low_confidence"]
    assert why_failed({"unanswered": False, "confidence": 0.8, "rating": -1}) == ["thumbs_down"]
    assert why_failed({"unanswered": False, "confidence": None, "rating": 1}) == []


def test_agglomeration_is_average_linkage_with_a_threshold():
    v = np.array([[1, 0, 0], [0.99, 0.14, 0], [0, 1, 0], [0, 0.98, 0.2], [0, 0, 1]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    assert agglomerate(v, 0.9) == [[0, 1], [2, 3], [4]]
    assert agglomerate(v, 0.999) == [[0], [1], [2], [3], [4]]
    assert agglomerate(v, -1.0) == [[0, 1, 2, 3, 4]]
    assert agglomerate(np.zeros((0, 3), np.float32), 0.5) == []


def test_questions_in_two_languages_are_brought_as_close_as_one_languages():
    rng = np.random.default_rng(0)
    en = rng.normal(size=(6, 8)) + np.array([3, 0, 0, 0, 0, 0, 0, 0])   # a language's own direction
    zh = rng.normal(size=(6, 8)) + np.array([0, 3, 0, 0, 0, 0, 0, 0])
    v = np.vstack([en, zh]).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    langs = ["en"] * 6 + ["zh"] * 6
    offset = language_offset(v, langs)
    sim = v @ v.T
    same = np.mean([sim[i, j] for i in range(12) for j in range(12) if i != j and langs[i] == langs[j]])
    cross = np.mean([sim[i, j] for i in range(12) for j in range(12) if langs[i] != langs[j]])
    assert offset == pytest.approx(same - cross, abs=1e-6) and offset > 0.3
    assert language_offset(v[:8], langs[:8]) == 0.0          # two zh questions: too few to measure
    pair = np.array([[1, 0], [0.6, 0.8]], dtype=np.float32)  # cosine 0.6
    assert agglomerate(pair, 0.7, ["en", "zh"]) == [[0], [1]]
    assert agglomerate(pair, 0.7, ["en", "zh"], 0.15) == [[0, 1]]
    assert agglomerate(pair, 0.7, ["en", "en"], 0.15) == [[0], [1]]


def test_the_report_clusters_the_unanswered_topics(logged, embedder):
    with Store(logged.db_path, readonly=True) as st:
        rep = gap_report(st, embedder)
        ace = st.nodes.page_sections("en/application-dev/quick-start/start-with-ace-tools.md")
        section_ids = {row[0] for row in ace}
    assert rep.asked == 12 and rep.failed == 8 and rep.answered == 4 and rep.answered_pct == 33.3
    assert [g["count"] for g in rep.gaps] == [4, 3]
    blue, push = rep.gaps
    assert set(blue["examples"]) == set(BLUETOOTH) and blue["reasons"] == {"unanswered": 4}
    assert set(push["examples"]) == set(PUSH)
    assert "bluetooth" in blue["lacking"] and "push" in push["lacking"]
    assert len(blue["nearest_sections"]) == 3 and all(s["id"].startswith("chunk-") for s in blue["nearest_sections"])
    # the thumbed-down answer is a failed question asked once, with its section
    assert [o["question"] for o in rep.one_offs] == ["How do I run ace check?"]
    assert rep.one_offs[0]["reasons"] == {"thumbs_down": 1}
    assert sum(t["count"] for t in rep.topics) <= 12 and rep.topics[0]["count"] >= 4
    assert section_ids  # the excerpt is there to be near


def test_cli_formats_and_since(logged, capsys):
    db = str(logged.db_path)
    assert main(["gaps", "--db", db, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["asked"] == 12 and [g["count"] for g in data["gaps"]] == [4, 3]
    assert data["translations"]["trees"] == ["en", "zh-cn"]
    assert {p["page"] for p in data["translations"]["no_counterpart"]} == {
        "en/application-dev/quick-start/figure-gallery.md"}

    assert main(["gaps", "--db", db, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    kinds = [r["kind"] for r in rows]
    assert kinds.count("gap") == 2 and kinds.count("one-off") == 1 and "answered_pct" in kinds
    assert "no-counterpart" in kinds
    assert rows[0]["count"] == "4" and "Bluetooth" in rows[0]["examples"]

    assert main(["gaps", "--db", db]) == 0
    md = capsys.readouterr().out
    assert md.startswith("# Gap report") and "**12** questions asked, **33.3%** answered" in md
    assert "## Translation gaps" in md and "figure-gallery.md" in md

    # only June: the five answered questions, one of them thumbed down
    assert main(["gaps", "--db", db, "--since", "2026-06-01", "--format", "json"]) == 0
    june = json.loads(capsys.readouterr().out)
    assert june["asked"] == 5 and june["failed"] == 1 and june["gaps"] == [] and june["answered_pct"] == 80.0

    assert main(["gaps", "--db", db, "--translations", "--format", "json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"translations"}


def test_bad_since_is_one_line(logged, capsys):
    assert main(["gaps", "--db", str(logged.db_path), "--since", "last tuesday"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--since wants a date" in err
    with pytest.raises(DgragError):
        since_date("2026-13-45")
    assert since_date("2026-05-01") == "2026-05-01T00:00:00+00:00"
    assert since_date("2026-05-01T12:00:00+02:00") == "2026-05-01T10:00:00+00:00"


def test_the_insights_tab_needs_the_secret_and_offers_the_report(logged):
    import dataclasses

    from dgrag.errors import AccessDenied
    from dgrag.web.insights import report_text
    from dgrag.web.service import Service
    from dgrag.web.ui import build_demo

    service = Service(dataclasses.replace(logged, admin_secret="s3cret"))
    with pytest.raises(AccessDenied):
        report_text(service, "guess", "", "md")
    md, path = report_text(service, "s3cret", "2026-05-01", "csv")
    assert md.startswith("# Gap report since 2026-05-01") and path.endswith("gaps.csv")
    with open(path, encoding="utf-8") as f:
        assert [r["kind"] for r in csv.DictReader(f)].count("gap") == 2
    with pytest.raises(DgragError):
        report_text(service, "s3cret", "yesterday", "md")
    demo = build_demo(service)
    assert any(getattr(b, "label", None) == "Insights" for b in demo.blocks.values())
