"""A live app over several index files on 127.0.0.1, and the official MCP client against it.

`two_indexes` builds two index files from the fixture excerpt, the English pages in one and the
Chinese pages in the other (real files, the packaged model), so a test can tell at a glance
whether a result came from the other file.
"""
from __future__ import annotations

import asyncio
import shutil
import threading
import time
from pathlib import Path

from app_server import LiveApp, free_port

from dgrag.config import Settings

URL_TEMPLATE = "https://github.com/arkui-x/docs/blob/master/{path}#L{line}"


def build_index(root: Path, docs: Path, name: str, include: str, embedder) -> Path:
    from dgrag.ingest.pipeline import index_folder
    from dgrag.store import Store

    s = Settings(db_path=root / f"{name}.db", docs_root=docs, url_template=URL_TEMPLATE, include=include)
    with Store(s.db_path) as st:
        index_folder(s, st, embedder)
    return s.db_path


def two_indexes(root: Path, fixture_docs: Path, embedder) -> tuple[Path, Path, Path]:
    """(folder, en.db, zh.db): the excerpt's English pages, and its Chinese ones, one file each."""
    docs = root / "docs"
    shutil.copytree(fixture_docs, docs)
    folder = root / "indexes"
    folder.mkdir()
    return folder, build_index(folder, docs, "en", "en/*", embedder), build_index(folder, docs, "zh", "zh-cn/*",
                                                                                 embedder)


def start_served(settings: Settings) -> tuple[LiveApp, object]:
    """The app as build_app makes it (every index of the settings, MCP and /v1 included), served
    by uvicorn in a thread: (the live app, its Indexes)."""
    import uvicorn

    from dgrag.web.server import build_app

    built = build_app(settings)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(built.app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    assert server.started, "the app did not start"
    for _, svc in built.indexes:
        svc.handle.get()
    return LiveApp(f"http://127.0.0.1:{port}", built.service, server, thread), built.indexes


async def _with_session(url: str, headers: dict | None, work):
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=headers or {}, timeout=60) as http:
        async with streamable_http_client(url + "/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)


def mcp_run(url: str, work, headers: dict | None = None):
    """Run `await work(session)` in an initialized MCP client session against the live app."""
    return asyncio.run(_with_session(url, headers, work))


def tool_names(url: str, headers: dict | None = None) -> set[str]:
    async def work(session):
        return {t.name for t in (await session.list_tools()).tools}

    return mcp_run(url, work, headers)


def call(url: str, name: str, args: dict, headers: dict | None = None):
    """One tool call: the CallToolResult (is_error, content, structured_content)."""
    async def work(session):
        return await session.call_tool(name, args)

    return mcp_run(url, work, headers)
