"""The MCP tools at /mcp on a live app (127.0.0.1), driven by the official `mcp` SDK's client:
every tool listed and called, a real search finding the ArkUI-X section it should, bad
arguments answered as MCP errors (and the server still answering), the caller's token budget
held, the write tools only for a client that sends the admin secret, and the Spaces entry
(app.py) serving MCP on its own port."""
from __future__ import annotations

import importlib.util
import json
import threading
import time

import httpx2
import pytest
from app_server import app_settings, free_port
from live_clients import call, mcp_run, start_served, tool_names

READ_TOOLS = {"search_docs", "read_section", "ask", "list_indexes"}
ADMIN_TOOLS = {"index_docs", "cancel_job"}


@pytest.fixture
def live(tmp_path, fixture_index):
    app, indexes = start_served(app_settings(tmp_path, fixture_index))
    yield app
    app.stop()


def _data(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


def _error(result) -> str:
    assert result.is_error, result.structured_content
    return result.content[0].text


def test_every_tool_listed_with_its_schema_and_a_search_finds_the_section(live):
    async def work(session):
        return (await session.list_tools()).tools

    tools = {t.name: t for t in mcp_run(live.url, work)}
    assert set(tools) == READ_TOOLS  # no admin secret configured: no write tools at all
    props = tools["search_docs"].input_schema["properties"]
    assert {"query", "index", "max_tokens", "sections"} <= set(props)
    assert props["max_tokens"]["maximum"] == 20_000 and tools["search_docs"].annotations.read_only_hint

    found = _data(call(live.url, "search_docs", {"query": "How do I create an application with ACE Tools?"}))
    first = found["sections"][0]
    assert first["source_path"] == "en/application-dev/quick-start/start-with-ace-tools.md"
    assert first["source_url"].startswith("https://github.com/arkui-x/docs/blob/master/en/application-dev/")
    assert "ACE Tools" in first["breadcrumb"] and first["markdown"] and first["id"].startswith("chunk")
    assert found["tokens"] <= found["max_tokens"] == 4000 and found["index"] == "app"


def test_code_comes_with_its_section(live):
    found = _data(call(live.url, "search_docs", {"query": "ace create 命令 创建工程", "sections": 10,
                                                 "max_tokens": 20000}))
    with_code = [s for s in found["sections"] if s["code"]]
    assert with_code, "a code block retrieved on a section's lines is listed with it"
    for s in with_code:
        for c in s["code"]:
            assert s["lines"][0] <= c["lines"][0] <= s["lines"][1] and c["markdown"].startswith("```")


def test_the_token_budget_holds(live):
    small = _data(call(live.url, "search_docs", {"query": "ArkTS two-way sync $$ syntax", "max_tokens": 100,
                                                 "sections": 10}))
    assert 0 < small["tokens"] <= 100 and small["sections"]
    assert small["left_out"] > 0 or small["sections"][0].get("truncated")


def test_read_a_section_and_a_whole_page(live):
    first = _data(call(live.url, "search_docs", {"query": "ACE Tools create application"}))["sections"][0]
    section = _data(call(live.url, "read_section", {"id": first["id"]}))
    assert section["id"] == first["id"] and section["type"] == "chunk"
    assert section["markdown"].startswith(first["markdown"][:200].rstrip("\n. "))
    from dgrag.store import Store

    with Store(live.service.settings.db_path, readonly=True) as st:
        # a page's id (a hash of its path) as the store has it
        file_id = st.con.execute("SELECT id FROM nodes WHERE type='file' AND source_path=?",
                                 (first["source_path"],)).fetchone()[0]
    page = _data(call(live.url, "read_section", {"id": file_id}))
    assert page["type"] == "file" and len(page["sections"]) > 1 and first["id"] in page["sections"]
    assert first["markdown"][:100] in page["markdown"] and not page["truncated"]
    cut = _data(call(live.url, "read_section", {"id": file_id, "max_tokens": 100}))
    assert cut["truncated"] and cut["tokens"] <= 100


def test_ask_without_an_llm_is_the_retrieved_context_and_list_indexes(live):
    out = _data(call(live.url, "ask", {"question": "如何用 ACE Tools 创建应用？"}))
    assert "**延伸阅读**" in out["answer"] and not out["llm"] and out["references"] and out["answerable"] is True
    assert out["components"][0]["type"] == "answer" and "chunk-" not in out["answer"]
    assert out["docs_version"]["pages"] == 11  # what the answer comes from
    listed = _data(call(live.url, "list_indexes", {}))
    assert listed["default"] == "app" and [r["name"] for r in listed["indexes"]] == ["app"]
    assert listed["indexes"][0]["nodes"] > 0 and "path" not in listed["indexes"][0]


def test_ask_with_an_llm_cites_with_links(tmp_path, fixture_index, openai_server_factory):
    llm = openai_server_factory(lambda r: "DONE" if r.get("tools") else "Create it with ACE Tools [1].")
    app, _ = start_served(app_settings(tmp_path, fixture_index, llm_base_url=llm.url + "/v1", llm_model="m",
                                       llm_timeout_s=5, llm_backoff_s=0.01))
    try:
        out = _data(call(app.url, "ask", {"question": "How do I create an app with ACE Tools?"}))
    finally:
        app.stop()
    assert out["llm"] and out["answer"].startswith("Create it with ACE Tools [1].")
    assert "[1] [" in out["answer"] and "](https://github.com/arkui-x/docs/blob/master/" in out["answer"]


@pytest.mark.parametrize("name, args, says", [
    ("search_docs", {"query": ""}, "empty query"),
    ("search_docs", {"query": "x" * 2001}, "2001 characters"),
    ("search_docs", {"query": "ace", "max_tokens": 5}, "max_tokens"),
    ("search_docs", {"query": "ace", "sections": 0}, "sections"),
    ("search_docs", {"query": "ace", "index": "../other"}, "no index named"),
    ("search_docs", {"query": "ace", "retrieval_config": {"final_chunk_k": 10 ** 6}}, "at most 1000"),
    ("search_docs", {"query": "ace", "retrieval_config": {"nope": 1}}, "unknown retrieval parameter"),
    ("search_docs", {}, "query"),
    ("read_section", {"id": "chunk-does-not-exist"}, "no section or page"),
    ("ask", {"question": " "}, "empty query"),
    ("no_such_tool", {}, "no_such_tool"),
])
def test_bad_arguments_are_mcp_errors(live, name, args, says):
    assert says in _error(call(live.url, name, args))
    assert _data(call(live.url, "list_indexes", {}))["default"] == "app"  # and the server still answers


def test_the_request_bounds_of_retrieve_hold_on_mcp(live):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search_docs", "arguments": {"query": "x " * 40_000}}}
    r = httpx2.post(live.url + "/mcp", content=json.dumps(body),
                    headers={"content-type": "application/json", "accept": "application/json, text/event-stream"})
    assert r.status_code == 413 and r.json()["type"] == "RequestTooLarge"


def test_write_tools_only_with_the_admin_secret(tmp_path, fixture_index):
    app, indexes = start_served(app_settings(tmp_path, fixture_index, admin_secret="s3cret"))
    try:
        assert tool_names(app.url) == READ_TOOLS
        assert tool_names(app.url, {"authorization": "Bearer s3cret"}) == READ_TOOLS | ADMIN_TOOLS
        r = httpx2.post(app.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                        headers={"authorization": "Bearer wrong", "accept": "application/json, text/event-stream"})
        assert r.status_code == 403 and r.json()["type"] == "AccessDenied"
        assert "no_such_tool" not in _error(call(app.url, "index_docs", {}))  # unknown to a reader: not a tool
        started = _data(call(app.url, "index_docs", {}, {"authorization": "Bearer s3cret"}))
        assert started["job"] == "index" and started["index"] == "app"
        deadline = time.time() + 300
        while not (indexes.service.job and indexes.service.job.done) and time.time() < deadline:
            time.sleep(0.2)
        job = _data(call(app.url, "list_indexes", {}))["indexes"][0]["job"]
        assert job == {"name": "index", "done": True, "error": None}
        cancelled = _data(call(app.url, "cancel_job", {}, {"x-admin-secret": "s3cret"}))
        assert cancelled["index"] == "app" and cancelled["status"]
    finally:
        app.stop()


def test_the_spaces_entry_serves_mcp(tmp_path, fixture_index, monkeypatch):
    """app.py, as Spaces runs it: the app built at import serves /mcp and /v1 on its own port."""
    import uvicorn

    settings = app_settings(tmp_path, fixture_index)
    monkeypatch.setenv("DGRAG_DB_PATH", str(settings.db_path))
    spec = importlib.util.spec_from_file_location("spaces_app", str(__import__("pathlib").Path(__file__)
                                                                      .resolve().parent.parent / "app.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(module.app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.time() + 30
        while not server.started and time.time() < deadline:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}"
        assert tool_names(url) == READ_TOOLS
        assert httpx2.get(url + "/v1/models").json()["data"][0]["id"] == "app"
        assert httpx2.get(url + "/").status_code == 200  # the UI, on the same port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
