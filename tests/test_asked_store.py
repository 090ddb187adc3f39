"""The question log and feedback tables (store/asked.py) on a real index file."""
import pytest

from dgrag.store import Store


def test_an_answer_and_its_feedback_round_trip_without_moving_the_graph_version(tmp_path):
    with Store(tmp_path / "i.db") as st:
        version = st.meta.graph_version()
        st.asked.record_answer("a1", channel="rest", question="How do I add a route?", language="en",
                               sections=["p/s1", "p/s2"], confidence=0.42, unanswered=False,
                               answer_text="Use the router.", index_state='{"commit": "abc"}')
        st.asked.record_answer("a1", channel="rest", question="changed")  # the first record stays
        assert st.asked.record_feedback("a1", -1, "wrong page", "widget") > 0
        st.asked.record_feedback("a1", 0, "", "chat")
        got = st.asked.answer("a1")
        assert got["question"] == "How do I add a route?" and got["sections"] == ["p/s1", "p/s2"]
        assert got["confidence"] == pytest.approx(0.42) and got["unanswered"] is False
        assert [f["rating"] for f in st.asked.feedback_for("a1")] == [-1, 0]
        (row,) = st.asked.asked_since("")
        assert row["rating"] == -1 and row["comments"] == ["wrong page"]
        assert st.meta.graph_version() == version  # the log is not part of the graph
        with pytest.raises(ValueError):
            st.asked.record_feedback("a1", 5)


def test_asked_since_and_prune_keep_the_retention_period(tmp_path):
    with Store(tmp_path / "i.db") as st:
        st.asked.record_answer("old", channel="chat", question="q1", asked_at="2026-01-01T00:00:00+00:00")
        st.asked.record_answer("new", channel="chat", question="q2", asked_at="2026-06-01T00:00:00+00:00")
        st.asked.record_feedback("old", 1)
        assert [r["id"] for r in st.asked.asked_since("2026-03-01")] == ["new"]
        assert st.asked.prune("2026-03-01") == 1
        assert [r["id"] for r in st.asked.asked_since("")] == ["new"]
        assert st.asked.counts() == {"asked": 1, "feedback": 0}
