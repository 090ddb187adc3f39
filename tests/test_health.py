"""/health is polled: it describes the index file from a cache, read again only when the file
changed, not from a new SQLite connection at every call."""
from __future__ import annotations

import dgrag.store
from dgrag.web.service import Service
from dgrag.store import Store


def test_health_opens_the_file_once_and_again_only_after_a_write(indexed, monkeypatch):
    opened = []

    class Counting(Store):
        def __init__(self, path, **kw):
            opened.append(path)
            super().__init__(path, **kw)

    service = Service(indexed)
    monkeypatch.setattr(dgrag.store, "Store", Counting)
    first = [service.health() for _ in range(5)]
    assert len(opened) == 1 and all(h == first[0] for h in first)
    assert first[0]["index"]["docs_root"] and first[0]["status"] == "ok"
    with Store(indexed.db_path) as st:  # a writer: the description must follow it
        st.meta.set("docs_root", "/elsewhere/docs")
    assert service.health()["index"]["docs_root"] == "/elsewhere/docs" and len(opened) == 2
    service.health()["index"]["docs_root"] = "changed by a caller"  # the cache hands out copies
    assert service.health()["index"]["docs_root"] == "/elsewhere/docs" and len(opened) == 2
