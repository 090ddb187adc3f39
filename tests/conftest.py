"""Shared fixtures: settings, the fixture excerpt, migrated temporary indexes, and a guard
that fails any test trying to reach beyond 127.0.0.1."""
from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from dgrag.config import Settings  # noqa: E402
from dgrag.store import Store  # noqa: E402

HERE = Path(__file__).resolve().parent
FIXTURE_DOCS = HERE / "fixtures" / "docs"
SHARED = HERE.parent.parent / "shared"
CORPUS = HERE.parent / "data" / "arkui-x-docs"  # the demo corpus shipped with the repo
MUSIQUE = SHARED / "bench" / "musique"

_real_connect = socket.socket.connect


def _guarded_connect(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and self.family in (socket.AF_INET, socket.AF_INET6):
        if host not in ("127.0.0.1", "localhost", "::1") and not host.startswith("127."):
            raise RuntimeError(f"test tried to reach {address!r}: tests stay on 127.0.0.1")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


@pytest.fixture
def docs(tmp_path) -> Path:
    """A private, writable copy of the fixture excerpt."""
    dst = tmp_path / "docs"
    shutil.copytree(FIXTURE_DOCS, dst)
    return dst


@pytest.fixture
def settings(tmp_path, docs) -> Settings:
    return Settings(db_path=tmp_path / "index.db", docs_root=docs,
                    url_template="https://github.com/arkui-x/docs/blob/master/{path}#L{line}")


@pytest.fixture
def store(settings):
    with Store(settings.db_path) as s:
        yield s


@pytest.fixture(scope="session")
def embedder():
    from dgrag.backends.embedder_choice import make_embedder

    return make_embedder(Settings())


@pytest.fixture(scope="session")
def hash_embedder():
    """No model: deterministic hashed features, for tests of plumbing rather than ranking."""
    from dgrag.backends.embedder_choice import make_embedder

    return make_embedder(Settings(embedder="hash"))


@pytest.fixture(scope="session")
def fixture_index(tmp_path_factory, embedder):
    """The excerpt indexed once per session: (settings, report). Treat as read-only."""
    from dgrag.ingest.pipeline import index_folder

    root = tmp_path_factory.mktemp("fixture-index")
    shutil.copytree(FIXTURE_DOCS, root / "docs")
    # no question log: tests that serve this file directly would write their questions into it
    s = Settings(db_path=root / "index.db", docs_root=root / "docs", log_questions=False,
                 url_template="https://github.com/arkui-x/docs/blob/master/{path}#L{line}")
    with Store(s.db_path) as st:
        report = index_folder(s, st, embedder)
    return s, report


@pytest.fixture
def indexed(tmp_path, fixture_index):
    """A private copy of the indexed excerpt (docs + index file): settings for it."""
    base, _ = fixture_index
    shutil.copytree(base.docs_root, tmp_path / "idocs")
    shutil.copy(base.db_path, tmp_path / "indexed.db")
    with Store(tmp_path / "indexed.db") as st:  # its log starts empty: other tests answered on the original
        st.asked.prune("9999")
    return Settings(db_path=tmp_path / "indexed.db", docs_root=tmp_path / "idocs", url_template=base.url_template)


from openai_fixtures import llm_settings, openai_server, openai_server_factory  # noqa: E402,F401


def crafted_retriever(root: Path, pages: dict[str, str], hash_embedder):
    """A Retriever over `pages` (file name -> Markdown) written under `root`, indexed and given the
    offline semantic layer with the hash embedder: a small corpus made for one ranking question."""
    from dgrag.ingest.pipeline import index_folder
    from dgrag.retrieve.retriever import Retriever
    from dgrag.workflows import enrich_index

    (root / "docs").mkdir()
    for name, text in pages.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    s = Settings(db_path=root / "index.db", docs_root=root / "docs", embedder="hash")
    with Store(s.db_path) as st:
        index_folder(s, st, hash_embedder)
        enrich_index(s, st, llm=None)
    return Retriever(Settings(db_path=s.db_path), embedder=hash_embedder)
