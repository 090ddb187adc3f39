"""Several index files in one app: two real files (the excerpt's English pages in one, its Chinese
pages in the other) served together by one live app; each request names its index (REST field,
MCP argument, OpenAI model name) and never gets the other file's nodes; /health lists both; each
file has its own writer; the CLI's --db given twice, a folder of files, and the refusals."""
from __future__ import annotations

import argparse

import httpx2
import openai
import pytest
from conftest import FIXTURE_DOCS
from live_clients import call, start_served, two_indexes

from dgrag.config import Settings
from dgrag.errors import ConfigError, DgragError

EN, ZH = "en/", "zh-cn/"
QUESTIONS = ["How do I create an application with ACE Tools?", "如何用 ACE Tools 创建应用？", "触摸事件 touch event"]


@pytest.fixture(scope="module")
def files(tmp_path_factory, embedder):
    return two_indexes(tmp_path_factory.mktemp("two-indexes"), FIXTURE_DOCS, embedder)


@pytest.fixture(scope="module")
def live(files):
    folder, en, zh = files
    app, indexes = start_served(Settings(db_path=en, more_db_paths=str(zh)))
    yield app, indexes
    app.stop()


def _paths(result: dict) -> set[str]:
    return {it["source_path"] for key in ("chunks", "codes", "tables", "images") for it in result[key]}


def test_rest_requests_name_their_index_and_never_mix(live):
    app, _ = live
    for q in QUESTIONS:  # the same question, in either language, stays in the file it names
        en = httpx2.post(app.url + "/retrieve", json={"query": q, "index": "en"}, timeout=60).json()
        zh = httpx2.post(app.url + "/retrieve", json={"query": q, "index": "zh"}, timeout=60).json()
        default = httpx2.post(app.url + "/retrieve", json={"query": q}, timeout=60).json()
        assert _paths(en) and all(p.startswith(EN) for p in _paths(en))
        assert _paths(zh) and all(p.startswith(ZH) for p in _paths(zh))
        assert [c["id"] for c in default["chunks"]] == [c["id"] for c in en["chunks"]]  # the first file
    chat = httpx2.post(app.url + "/chat", json={"query": QUESTIONS[0], "index": "zh"}, timeout=60).json()
    assert chat["references"] and all(r["source_url"].split("/master/")[1].startswith(ZH)
                                      for r in chat["references"])
    bad = httpx2.post(app.url + "/retrieve", json={"query": "ace", "index": "fr"})
    assert bad.status_code == 422 and "no index named 'fr'" in bad.json()["error"] and "en, zh" in bad.json()["error"]


def test_health_lists_both(live):
    app, indexes = live
    health = httpx2.get(app.url + "/health").json()
    assert health["default_index"] == "en" and [i["name"] for i in health["indexes"]] == ["en", "zh"]
    assert all(i["loaded"] and i["nodes"] > 0 and i["fact_search"] == "exact" for i in health["indexes"])
    assert health["indexes"][0]["nodes"] != health["indexes"][1]["nodes"]
    assert health["index_path"].endswith("en.db")  # the top-level fields stay the default index's


def test_mcp_and_openai_name_their_index_and_never_mix(live):
    app, _ = live
    for name, prefix in (("en", EN), ("zh", ZH)):
        found = call(app.url, "search_docs", {"query": QUESTIONS[1], "index": name, "sections": 10}).structured_content
        assert found["index"] == name and found["sections"]
        assert all(s["source_path"].startswith(prefix) for s in found["sections"])
    listed = call(app.url, "list_indexes", {}).structured_content
    assert [r["name"] for r in listed["indexes"]] == ["en", "zh"] and listed["default"] == "en"
    en_id = call(app.url, "search_docs", {"query": "ACE Tools", "index": "en"}).structured_content["sections"][0]["id"]
    assert call(app.url, "read_section", {"id": en_id, "index": "en"}).structured_content["id"] == en_id
    assert call(app.url, "read_section", {"id": en_id, "index": "zh"}).is_error  # not in the other file

    client = openai.OpenAI(base_url=app.url + "/v1", api_key="unused", max_retries=0, timeout=60)
    assert [m.id for m in client.models.list()] == ["en", "zh"]
    for name, prefix in (("en", EN), ("zh", ZH)):
        done = client.chat.completions.create(model=name, messages=[{"role": "user", "content": QUESTIONS[0]}])
        cites = done.model_extra["citations"]
        assert cites and all(c.split("/master/")[1].startswith(prefix) for c in cites)


def test_each_file_has_its_own_service_and_writer(live):
    _, indexes = live
    en, zh = indexes.get("en"), indexes.get("zh")
    assert en.writer is not zh.writer and en.handle is not zh.handle and en.retriever is not zh.retriever
    assert en.settings.db_path.name == "en.db" and zh.settings.db_path.name == "zh.db"
    generation = zh.handle.generation
    en.writer.run("noop", lambda job: {})  # a write to one file reloads that file only
    assert zh.handle.generation == generation


def test_a_folder_serves_every_index_in_it(files, tmp_path):
    from dgrag.web.indexes import Indexes, index_files

    folder, en, zh = files
    (folder / "en.previous.db").write_bytes(b"")  # what open_index keeps aside: not an index
    assert [p.name for p in index_files(Settings(db_path=folder))] == ["en.db", "zh.db"]
    assert [p.name for p in index_files(Settings(db_path=en, more_db_paths=f"{zh}:{en}"))] == ["en.db", "zh.db"]
    assert Indexes.from_settings(Settings(db_path=folder)).names == ["en", "zh"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no index files"):
        index_files(Settings(db_path=tmp_path / "empty"))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "en.db").write_bytes((folder / "en.db").read_bytes())
    with pytest.raises(ConfigError, match="two index files are named 'en'"):
        Indexes.from_settings(Settings(db_path=en, more_db_paths=str(tmp_path / "other" / "en.db")))
    with pytest.raises(ConfigError, match="its name must be"):
        Indexes.from_settings(Settings(db_path=tmp_path / "bad name.db"))


def test_the_cli_takes_db_more_than_once(files, monkeypatch, tmp_path):
    from dgrag.cli import parser as cli
    from dgrag.cli import serve
    from dgrag.web import server

    folder, en, zh = files
    args = cli.build_parser().parse_args(["serve", "--db", str(en), "--db", str(zh), "--port", "8123"])
    assert args.db == [str(en), str(zh)]
    seen = {}
    monkeypatch.setattr(server, "serve", lambda built, host, port, build_demo_index: seen.update(
        names=built.indexes.names, port=port, demo=build_demo_index))
    assert serve.cmd_serve(args) == 0
    assert seen == {"names": ["en", "zh"], "port": 8123, "demo": False}
    missing = argparse.Namespace(**{**vars(args), "db": [str(en), str(tmp_path / "gone.db")], "build_demo": True})
    with pytest.raises(DgragError, match="gone.db"):  # only the first file may be built by --build-demo
        serve.cmd_serve(missing)


def test_the_ui_selector_picks_the_index(live):
    import re

    from gradio_client import Client

    app, _ = live
    client = Client(app.url + "/", verbose=False)
    sliders = (10, 2, 2, 2, 50, 100, 2.0, 12000, 0.5)
    for name, prefix in (("en", EN), ("zh", ZH)):
        _, refs, _ = client.predict(QUESTIONS[0], [], True, "diffusion", *sliders, name, api_name="/chat")
        paths = re.findall(r"/blob/master/([^#)]+)", refs)
        assert paths and all(p.startswith(prefix) for p in paths)
        cols = client.predict("ACE Tools", name, api_name="/inspect")
        assert all(p.startswith(prefix) for p in re.findall(r"/blob/master/([^#)]+)", cols[2]))
