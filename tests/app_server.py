"""A live dgrag app (REST API + Gradio UI) on 127.0.0.1, in a background thread."""
from __future__ import annotations

import shutil
import socket
import threading
import time
from dataclasses import dataclass

from dgrag.config import Settings
from dgrag.store import Store


@dataclass
class LiveApp:
    url: str
    service: object
    server: object
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(settings: Settings) -> LiveApp:
    import gradio as gr
    import uvicorn

    from dgrag.web.api import build_api
    from dgrag.web.service import Service
    from dgrag.web.ui import build_demo

    service = Service(settings)
    app = gr.mount_gradio_app(build_api(service), build_demo(service), path="/")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    service.handle.get()
    return LiveApp(f"http://127.0.0.1:{port}", service, server, thread)


def app_settings(tmp_path, fixture_index, **kw) -> Settings:
    base, _ = fixture_index
    shutil.copytree(base.docs_root, tmp_path / "docs")
    shutil.copy(base.db_path, tmp_path / "app.db")
    with Store(tmp_path / "app.db") as st:  # a served app's log starts empty: other tests answered on the original
        st.asked.prune("9999")
    return Settings(db_path=tmp_path / "app.db", docs_root=tmp_path / "docs", url_template=base.url_template, **kw)
