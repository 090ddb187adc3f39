"""MCP tools on the app's own port, at /mcp (streamable HTTP, the official `mcp` SDK's MCPServer).

Why the SDK and not Gradio's `mcp_server=True`: Gradio makes tools of the UI's event functions
(their inputs are the UI's components, their route is the UI's queue with its larger body limit),
and its `mcp` extra pins the SDK's 1.x line; the SDK's server, on a route of the FastAPI app, takes
tools written for agents, runs them through the same checks and bounds as /retrieve (the body limit
and rate limit of BoundedRequests, Service.check_request, the retriever's deadline), and lists the
write tools to an admin only.

Tools (read-only): search_docs, read_section, ask, list_indexes. With the admin secret set on the
server and sent by the client (`Authorization: Bearer <secret>`), the same endpoint serves a second
MCPServer that also has index_docs and cancel_job; without it those are not tools at all. Bad
arguments and refused requests are tool errors (`isError`, the message for the model to read).
"""
from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from ..errors import AccessDenied, DgragError
from .indexes import Indexes
from .leaving import LEAVING, WatchDisconnect
from .sections import MAX_SECTIONS, MAX_TOKENS, MIN_TOKENS, read_node, search_sections

PATH = "/mcp"
INSTRUCTIONS = ("Search and read the documentation indexed by this dgrag server. search_docs returns ranked "
                "sections (breadcrumb, source URL, Markdown, code) within max_tokens; read_section reads one "
                "section or a whole page by the id a search returned; ask writes a cited answer (the extractive "
                "one, cited sentences, when the server has no LLM); list_indexes names the indexes (pass one as "
                "`index`).")

_INDEX = Field(None, description="which index to search (see list_indexes); omitted: the default one")
_QUERY = Field(description="what to look for, in English or Chinese, as a question or keywords")


def secret_of(headers) -> str | None:
    """The admin secret a request carries: `Authorization: Bearer <secret>` or `X-Admin-Secret`."""
    if not headers:
        return None
    value = headers.get("authorization") or ""
    if value.lower().startswith("bearer "):
        return value[7:].strip()
    return headers.get("x-admin-secret")


def _call(fn, *args, **kw):
    """A dgrag refusal (a bad argument, a query too long, an unknown index) as a tool error."""
    try:
        return fn(*args, **kw)
    except DgragError as exc:
        raise ToolError(f"{type(exc).__name__}: {exc}") from None


def _read_tools(server, indexes: Indexes) -> None:
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @server.tool(annotations=read_only)
    def search_docs(query: Annotated[str, _QUERY],
                    index: Annotated[str | None, _INDEX] = None,
                    max_tokens: Annotated[int, Field(ge=MIN_TOKENS, le=MAX_TOKENS, description=(
                        "the most tokens of Markdown to return; sections past it are left out"))] = 4000,
                    sections: Annotated[int, Field(ge=1, le=MAX_SECTIONS, description="how many sections")] = 5,
                    retrieval_config: Annotated[dict[str, Any] | None, Field(description=(
                        "retrieval parameters as in POST /retrieve, e.g. {\"method\": \"ppr\"}"))] = None,
                    ) -> dict[str, Any]:
        """Search the docs: the best sections for the query, each with its breadcrumb (the heading
        path), source URL, Markdown and the code blocks on it, in rank order within max_tokens."""
        svc = _call(indexes.get, index)
        return {"index": indexes.name_of(svc),
                **_call(search_sections, svc, query, max_tokens, sections, retrieval_config)}

    @server.tool(annotations=read_only)
    def read_section(id: Annotated[str, Field(description="a section's or page's id, as search_docs returns it")],
                     index: Annotated[str | None, _INDEX] = None,
                     max_tokens: Annotated[int, Field(ge=MIN_TOKENS, le=MAX_TOKENS)] = 8000) -> dict[str, Any]:
        """Read one section (a chunk id) or a whole page (a file id) in full, as Markdown."""
        svc = _call(indexes.get, index)
        return {"index": indexes.name_of(svc), **_call(read_node, svc, id, max_tokens)}

    @server.tool(annotations=read_only)
    def ask(question: Annotated[str, Field(description="the question, in English or Chinese")],
            index: Annotated[str | None, _INDEX] = None,
            use_llm: Annotated[bool, Field(description="false: the extractive answer (cited sentences), no LLM")] = True,
            ) -> dict[str, Any]:
        """Ask the docs: the server's agent searches and writes a Markdown answer citing [n] with a
        numbered list of source links; with no LLM configured, the sentences of the docs that answer,
        cited. `answerable` false: the docs do not seem to cover the question. `answer_id` names the
        answer for POST /feedback."""
        svc = _call(indexes.get, index)
        out = _call(svc.chat, question, use_llm=use_llm, cancel=LEAVING.get(), channel="mcp")  # leaving stops it
        return {"index": indexes.name_of(svc), "answer": out["llm_response"], "llm": bool(out["meta"].get("llm")),
                "answer_id": out.get("answer_id"),
                "answerable": out.get("answerable"), "confidence": out.get("confidence"),
                "components": out.get("components", []), "references": out["references"][:50],
                "docs_version": out["meta"].get("docs_version")}

    @server.tool(annotations=read_only)
    def list_indexes() -> dict[str, Any]:
        """The indexes this server answers from (name, default, nodes, embedding model)."""
        rows = [{k: v for k, v in row.items() if k != "path"} for row in indexes.describe()]
        return {"default": indexes.default, "indexes": rows}


def _admin_tools(server, indexes: Indexes) -> None:
    writes = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)

    @server.tool(annotations=writes)
    def index_docs(ctx: Context, index: Annotated[str | None, _INDEX] = None,
                   folder: Annotated[str | None, Field(description="a docs folder on the server; omitted: the "
                                                                   "index's own")] = None) -> dict[str, Any]:
        """(admin) Re-index a docs folder into an index in the background (what changed only);
        list_indexes shows the job."""
        svc = _call(indexes.get, index)
        secret = secret_of(ctx.headers)
        _call(svc.check_admin, secret)  # refusals answer now; the job itself runs in a thread of its own
        if svc.job is not None and not svc.job.done:
            raise ToolError(f"a job is running on this index ({svc.job.name}); try again when it is done")
        docs = Path(folder or svc.settings.docs_root or svc.description().get("docs_root") or "")
        if not docs.is_dir():
            raise ToolError(f"not a folder on the server: {docs}")
        threading.Thread(target=_quietly, args=(svc.index_docs, docs, svc.settings.url_template, secret),
                         name=f"mcp-index-{indexes.name_of(svc)}", daemon=True).start()
        return {"index": indexes.name_of(svc), "job": "index", "folder": str(docs), "started": True}

    @server.tool(annotations=writes)
    def cancel_job(ctx: Context, index: Annotated[str | None, _INDEX] = None) -> dict[str, Any]:
        """(admin) Stop the running indexing job of an index at its next step."""
        svc = _call(indexes.get, index)
        return {"index": indexes.name_of(svc), "status": _call(svc.cancel_job, secret_of(ctx.headers))}


def _quietly(fn, *args) -> None:
    """A background job's own refusal (another job won the writer lock meanwhile) ends it; what
    it did is on the service's job."""
    try:
        fn(*args)
    except DgragError:
        pass


class McpEndpoint:
    """The /mcp route: the admin server for a request that carries the admin secret, the
    read-only one otherwise; a wrong secret is a 403."""

    def __init__(self, indexes: Indexes):
        self.indexes = indexes
        settings = indexes.service.settings
        self.secret = settings.admin_secret
        # WARNING: the SDK logs each stateless request at INFO (through rich, on stderr): noise,
        # and time on every call
        self.public = MCPServer("dgrag", instructions=INSTRUCTIONS, log_level="WARNING")
        _read_tools(self.public, indexes)
        self.admin = None
        if self.secret:
            self.admin = MCPServer("dgrag-admin", instructions=INSTRUCTIONS, log_level="WARNING")
            _read_tools(self.admin, indexes)
            _admin_tools(self.admin, indexes)
        self.apps = {k: self._app(s, settings) for k, s in (("public", self.public), ("admin", self.admin)) if s}

    @staticmethod
    def _app(server, settings):
        # stateless JSON: each POST stands alone (no session to keep between calls, nothing to
        # stream back); DNS-rebinding protection on when serving on a loopback address
        return server.streamable_http_app(streamable_http_path=PATH, stateless_http=True, json_response=True,
                                          max_request_body_size=settings.max_body_bytes, host=settings.server_host)

    @contextlib.asynccontextmanager
    async def running(self):
        async with contextlib.AsyncExitStack() as stack:
            for server in (self.public, self.admin):
                if server is not None:
                    await stack.enter_async_context(server.session_manager.run())
            yield

    async def __call__(self, scope, receive, send):
        from .http import _send_error
        from .index_keeper import same_secret

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        given = secret_of(headers)
        if given and self.secret:
            if not same_secret(given, self.secret):
                return await _send_error(send, 403, str(AccessDenied("wrong admin secret")), "AccessDenied")
            return await self.apps["admin"](scope, receive, send)
        return await self.apps["public"](scope, receive, send)


def mount(app, endpoint: McpEndpoint) -> McpEndpoint:
    """Add /mcp to the FastAPI app (before the UI is mounted at /); its session managers run in
    the app's lifespan (`endpoint.running()`)."""
    app.add_route(PATH, WatchDisconnect(endpoint), methods=["GET", "POST", "DELETE"], include_in_schema=False)
    return endpoint
