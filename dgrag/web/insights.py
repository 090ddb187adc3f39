"""The app's Insights tab: the gap report over the question log (workflows/gaps.py) and the
translation gaps, as `dgrag gaps` writes them. The log holds what people asked, so the report
needs the admin secret where the app has one (a read-only public demo)."""
from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from ..errors import DgragError
from .service import Service


def report_text(service: Service, secret: str, since: str, fmt: str) -> tuple[str, str | None]:
    """(the report as Markdown for the page, the path of the report written as `fmt` to download)."""
    from ..backends.embedder_choice import embedder_for_store
    from ..store import Store
    from ..workflows.gaps import gap_report, since_date
    from ..workflows.gaps_render import render

    service.check_admin(secret)
    service.log.flush()  # the answers given so far are in the file
    side = service.log.path if service.log.path not in (None, service.settings.db_path) else None
    with Store(service.settings.db_path, readonly=True) as store, \
            (Store(side, readonly=True) if side is not None and side.exists() else contextlib.nullcontext()) as log:
        # the batch engine, not the questions' lane (which waits a request's timeout at most)
        report = gap_report(store, embedder_for_store(service.settings, store), since_date(since), log=log)
    md = render(report, "md")
    if fmt == "md":
        return md, None
    out = Path(tempfile.mkdtemp(prefix="dgrag-gaps-")) / f"gaps.{fmt}"
    out.write_text(render(report, fmt), encoding="utf-8")
    return md, str(out)


def insights_tab(gr, service: Service) -> None:
    gr.Markdown("### What the docs fail to answer\nQuestions the answers flagged as not covered, answered with low "
                "confidence or thumbed down, clustered by topic, with the nearest sections and what they lack; the "
                "most asked topics; the share answered; pages and sections missing from one language tree.")
    secret = gr.Textbox(label="Admin secret", type="password", visible=service.read_only)
    with gr.Row():
        since = gr.Textbox(label="Since (date, optional)", placeholder="2026-05-01", elem_id="gaps-since")
        fmt = gr.Radio(["md", "csv", "json"], value="md", label="Download as", elem_id="gaps-format")
        go = gr.Button("Build the report", variant="primary", elem_id="gaps-build")
    body = gr.Markdown(elem_id="gaps-report")
    download = gr.File(label="Report", elem_id="gaps-file")

    def build(secret_value, since_value, fmt_value):
        try:
            return report_text(service, secret_value, since_value, fmt_value)
        except DgragError as exc:  # a bad date, no secret: one line on the page
            raise gr.Error(str(exc)) from None
        except Exception as exc:  # noqa: BLE001
            raise gr.Error(f"{type(exc).__name__}: {exc}") from None

    go.click(build, [secret, since, fmt], [body, download], concurrency_limit=1, api_name="gaps")
