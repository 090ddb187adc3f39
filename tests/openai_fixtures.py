"""Pytest fixtures around the fake OpenAI server (import them from conftest.py):

    from openai_fixtures import openai_server, openai_server_factory, llm_settings  # noqa: F401

* ``openai_server`` -- a started `OpenAIServer` with the default responder, stopped afterwards;
* ``openai_server_factory`` -- ``make(**kw) -> OpenAIServer`` (same keywords as `start_server`);
  every server it made is stopped afterwards;
* ``llm_settings`` -- `Settings` pointing the LLM at ``openai_server`` (model "test-model",
  key "sk-secret-123", timeout 0.5 s, backoff 0.01 s).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

try:
    from openai_server import FAULT_KINDS, OpenAIServer, default_responder, hashed_embedding, start_server
except ImportError:  # tests/ imported as a package
    from tests.openai_server import (  # type: ignore[no-redef]
        FAULT_KINDS, OpenAIServer, default_responder, hashed_embedding, start_server,
    )

TEST_API_KEY = "sk-secret-123"


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def openai_server_factory() -> Iterator[Callable[..., OpenAIServer]]:
    servers: list[OpenAIServer] = []

    def make(responder: Any = None, **kw: Any) -> OpenAIServer:
        server = start_server(responder, **kw)
        servers.append(server)
        return server

    try:
        yield make
    finally:
        for server in servers:
            server.stop()


@pytest.fixture
def llm_settings(openai_server: OpenAIServer):
    from dgrag.config import Settings

    return Settings(llm_base_url=openai_server.url + "/v1", llm_model="test-model", llm_api_key=TEST_API_KEY,
                    llm_timeout_s=0.5, llm_backoff_s=0.01)


__all__ = ["openai_server", "openai_server_factory", "llm_settings", "start_server", "OpenAIServer",
           "FAULT_KINDS", "default_responder", "hashed_embedding", "TEST_API_KEY"]
