"""The Gradio app: chat, retrieval inspector, indexing. Thin: every action is a Service call;
typed errors become gr.Error messages. Document text is rendered as sanitised Markdown."""
from __future__ import annotations

import threading
import time
from pathlib import Path

from ..answer.components import markdown as components_md
from ..answer.extractive import section_label
from ..answer.running import Running
from ..core import language_of
from ..config import RetrievalConfig
from ..errors import DgragError
from .builds import demo_docs
from .chat_md import KINDS, images_md, references_md, searches_md  # noqa: F401 - references_md: tests read it here
from .index_keeper import safe_extract_zip
from .indexes import Indexes
from .insights import insights_tab
from .service import Service
from .ui_feedback import feedback_controls

SETTINGS_SLIDERS = [  # (parameter, minimum, maximum, step)
    ("final_chunk_k", 1, 30, 1), ("final_code_k", 0, 10, 1), ("final_table_k", 0, 10, 1),
    ("final_image_k", 0, 10, 1), ("chunk_top_k", 5, 100, 5), ("diffusion_chunk_k", 10, 200, 10),
    ("diffusion_time_budget_s", 0.1, 5.0, 0.1), ("diffusion_max_expansions", 500, 30000, 500),
    ("rank_ppr_agreement", 0.0, 1.0, 0.05),
]


# ArkTS writes two-way binding as `$$value` and the docs title a page "$$语法": with Gradio's
# default LaTeX delimiters two such titles swallow everything between them into one formula.
NO_LATEX: list = []
# the methods in plain words (the value is the API's name); the details: METHOD_INFO, "How it works"
# ppr last and marked: an experimental comparison, below dense on documentation (METHOD_INFO)
METHODS = [("Best (graph)", "diffusion"), ("Similar text only", "dense"),
           ("Graph walk (PageRank): experimental comparison", "ppr")]
IDLE_S = 0.25  # while the model is silent, the chat's handler yields this often (so Stop can end it)


def _err(exc: Exception):
    import gradio as gr

    return gr.Error(str(exc) if isinstance(exc, DgragError) else f"{type(exc).__name__}: {exc}")


def _overrides(method: str, values: list) -> dict:
    cfg = {"method": method}
    for (name, *_), v in zip(SETTINGS_SLIDERS, values):
        cfg[name] = v
    return cfg


# Questions the first-start demo (the getting-started pages) answers, in both languages; the
# last two need two pages each, which is where the graph's walk can help.
EXAMPLES = [
    ["ACE Tools 怎么创建应用？"],
    ["How do I build an APK for Android with ACE Tools?"],
    ["如何在 Android 工程中集成 ArkUI-X？Activity 需要继承什么类？"],
    ["ace check says the SDK is missing although it is installed. Which setting fixes that?"],
    ["在 iOS 上运行 ArkUI-X 应用需要配置哪些环境，又如何用 ACE Tools 启动它？"],
]


def build_demo(served: Service | Indexes):
    """The tabs over one service, or several indexes: then a selector picks the index the Chat
    and inspector tabs answer from (the Index tab works on the default one)."""
    import gradio as gr

    indexes = served if isinstance(served, Indexes) else Indexes.of(served)
    service = indexes.service
    with gr.Blocks(title="dgrag — DualGraph RAG") as demo:
        gr.Markdown("# dgrag — DualGraph RAG\nQuestions over the indexed docs (ArkUI-X, Chinese and English), "
                    "answered from a dual graph of structure and entities, with citations.")
        _progress_banner(gr, service)
        picker = None
        if len(indexes) > 1:  # one file: no selector, and the UI's API is as it always was
            picker = gr.Dropdown(choices=indexes.names, value=indexes.default, label="Index", elem_id="index-pick")
        chooser = Chooser(indexes, picker)
        with gr.Tab("Chat", id="chat"):
            _chat_tab(gr, chooser)
        with gr.Tab("Retrieval inspector", id="inspector"):
            _inspector_tab(gr, chooser)
        with gr.Tab("Index", id="index"):
            _index_tab(gr, service, indexes)
        with gr.Tab("Insights", id="insights"):
            insights_tab(gr, service)
    return demo


class Chooser:
    """Which service answers a UI event: the selector's index (an extra, last input), else the
    default."""

    def __init__(self, indexes: Indexes, picker):
        self.indexes, self.picker = indexes, picker
        self.inputs = [picker] if picker is not None else []

    def split(self, values: tuple) -> tuple[Service, tuple]:
        if self.picker is None:
            return self.indexes.service, values
        return self.indexes.get(values[-1]), values[:-1]


def _progress_banner(gr, service: Service) -> None:
    """While a batched build runs (the first start's, or the Index tab's "index this folder"):
    pages done and left, and what answers cover so far; refreshed every 2 s while it runs and
    every 10 s otherwise (a build may start later), empty (hidden) when none runs."""
    banner = gr.Markdown(service.build_banner(), elem_id="build-banner")
    timer = gr.Timer(2.0)

    def tick():
        text = service.build_banner()
        return text, gr.Timer(2.0 if text else 10.0)

    timer.tick(tick, None, [banner, timer], api_name=False, queue=False)


# ---- chat -----------------------------------------------------------------------------------
def _text_of(content) -> str:
    """A chat message's text: Gradio 6 hands content back as a list of typed parts."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    return "".join(p.get("text", "") for p in parts if isinstance(p, dict) and p.get("type", "text") == "text")


def _choices(found: list[dict]) -> list[tuple[str, str]]:
    """The why-selector's entries: one per reference, as the list under the answer shows them."""
    return [(f"{KINDS.get(it['type'], it['type'])} · {section_label(it['breadcrumb'])}", it["id"])
            for r in found for key in ("chunks", "codes", "tables", "images") for it in r.get(key, [])]


def _chat_tab(gr, chooser: Chooser) -> None:
    chatbot = gr.Chatbot(label="Conversation", height=480, sanitize_html=True, elem_id="chatbot",
                         latex_delimiters=NO_LATEX)
    with gr.Row():
        box = gr.Textbox(placeholder="Ask about the docs — 中文或英文", scale=5, show_label=False, elem_id="question")
        send = gr.Button("Send", variant="primary", scale=1, elem_id="send")
        stop = gr.Button("Stop", variant="stop", scale=0, min_width=80, elem_id="stop")
        retry = gr.Button("Retry", scale=0, min_width=80, elem_id="retry")
    answer_ids = feedback_controls(gr, chatbot, chooser.indexes)  # thumbs and a comment on each answer
    with gr.Row():
        retrieval_only = gr.Checkbox(label="Retrieval only (no LLM)", value=False, elem_id="retrieval-only")
        method = gr.Radio(METHODS, value="diffusion", label="Method", elem_id="method")
    with gr.Accordion("How it works", open=False, elem_id="how-it-works"):
        gr.Markdown(METHOD_INFO)
    with gr.Accordion("Retrieval settings", open=False):
        sliders = [gr.Slider(lo, hi, value=getattr(RetrievalConfig(), name), step=step, label=name)
                   for name, lo, hi, step in SETTINGS_SLIDERS]
    gr.Examples(EXAMPLES, inputs=[box], label="Try (the last two span two pages)")
    refs = gr.Markdown(label="References", elem_id="references", latex_delimiters=NO_LATEX)
    asked = gr.State({})  # node id -> [query, settings] of the search that found it, for "why"
    with gr.Accordion("Why this reference? What ranked it, and the walk that reached it", open=False,
                      elem_id="why-panel") as panel:
        with gr.Row():
            pick = gr.Dropdown(choices=[], label="Reference", scale=4, elem_id="why-pick")
            show = gr.Button("Show why", scale=1, elem_id="why-show")
        why_text = gr.Markdown(elem_id="why-text", latex_delimiters=NO_LATEX)
        why_plot = gr.Plot(show_label=False, elem_id="why-plot")

    # the States stay out of the /chat API, whose outputs are (conversation, references, box)
    inputs = [box, chatbot, answer_ids, retrieval_only, method, *sliders, *chooser.inputs]
    outputs = [chatbot, refs, box, asked, answer_ids]
    respond = _responder(chooser)
    asking = [send.click(respond, inputs, outputs, concurrency_limit=8, api_name="chat"),
              box.submit(respond, inputs, outputs, concurrency_limit=8, api_name=False),
              retry.click(_last_question, [chatbot], [box, chatbot], queue=False, api_name=False).then(
                  respond, inputs, outputs, concurrency_limit=8, api_name=False)]
    for ev in asking:
        ev.then(_offer, [asked], [pick], queue=False, api_name=False)
    stop.click(None, None, None, cancels=asking, api_name=False)
    show.click(_why_opener(chooser), [pick, asked], [why_plot, why_text, panel], concurrency_limit=4,
               api_name=False)


def _responder(chooser: Chooser):
    """The chat's handler: streams (conversation, references, box), then the references'
    searches for the why-selector."""
    import gradio as gr

    def respond(message, history, answer_ids, only, meth, *values):
        try:
            service, values = chooser.split(values)
        except DgragError as exc:
            raise _err(exc) from None
        history = list(history or [])
        if not message or not message.strip():
            raise gr.Error("Type a question first.")
        past = [{"role": m["role"], "content": _text_of(m["content"])} for m in history]
        history += [{"role": "user", "content": message}, {"role": "assistant", "content": ""}]
        answer, found, rounds, config = "", [], [], _overrides(meth, values)
        running = Running(lambda cancel: service.chat_events(message, past, True, not only, config, cancel=cancel,
                                                             channel="chat"))
        try:
            for ev in running.events(idle_s=IDLE_S):
                if ev is None:  # the model is silent: a value that changes nothing, so Stop can close us
                    yield gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
                    continue
                if ev["type"] == "retrieval":
                    found.append(ev["result"].to_api())
                elif ev["type"] == "round":  # the agent's searches: "searched for X, then for Y"
                    rounds.append(ev)
                elif ev["type"] == "text":
                    answer += ev["text"]
                elif ev["type"] == "done":  # the thumbs under this message name this answer
                    answer_ids = {**(answer_ids or {}), str(len(history) - 1): ev["answer_id"]}
                # at the end, the answer's components under it (code, table, images, sources, follow-ups)
                extra = "\n\n".join(images_md(r) for r in found)
                if ev["type"] == "done" and ev.get("meta", {}).get("components"):
                    extra = components_md(ev["meta"]["components"], language_of(message))
                history[-1]["content"] = (searches_md(rounds) + answer
                                          + ("\n\n" + extra if extra and ev["type"] == "done" else ""))
                yield (history, "\n\n".join(references_md(r) for r in found), "", gr.skip(),
                       answer_ids if ev["type"] == "done" else gr.skip())  # the thumbs work once the answer is whole
        except Exception as exc:  # noqa: BLE001
            raise _err(exc) from None
        finally:  # Stop closes this generator: the answer stops too (a no-op once it ended)
            running.cancel()
        # the last values again, not gr.skip(): an API client reads its result from this one
        name = chooser.indexes.name_of(service)
        yield history, "\n\n".join(references_md(r) for r in found), "", {
            it_id: [label, r["query"], config, name] for r in found for label, it_id in _choices([r])}, answer_ids

    return respond


def _last_question(history):
    """Retry: the last question back in the box, its answer off the conversation."""
    import gradio as gr

    history = list(history or [])
    while history and history[-1]["role"] != "user":
        history.pop()
    if not history:
        raise gr.Error("Nothing to retry yet.")
    return _text_of(history.pop()["content"]), history


def _offer(searched):
    """The why-selector lists the references of the last answer."""
    import gradio as gr

    return gr.update(choices=[(label, i) for i, (label, *_) in (searched or {}).items()], value=None)


def _why_opener(chooser: Chooser):
    import gradio as gr

    def open_why(node_id, searched):
        if not node_id or node_id not in (searched or {}):
            raise gr.Error("Choose a reference first.")
        _, query, config, *name = searched[node_id]
        try:
            service = chooser.indexes.get(name[0] if name else None)
        except DgragError as exc:
            raise _err(exc) from None
        fig, text = _explain(service, query, config, node_id)
        return fig, text, gr.update(open=True)

    return open_why


def _explain(service: Service, query: str, config: dict, node_id: str):
    """The diffusion's picture and "why" (what ranked it) for one reference: the same question and settings
    again, verbose (retrieval is deterministic on one snapshot, and keeping every answer's
    trace would cost memory for a view most answers never open)."""
    from .graph_picture import explain

    try:
        result = service.retrieve(query, {**config, "method": "diffusion", "verbose": True})
    except Exception as exc:  # noqa: BLE001
        raise _err(exc) from None
    note = "" if config.get("method", "diffusion") == "diffusion" else \
        f"_This reference came from {config['method']}; below is the diffusion's ranking and walk for the same search._\n\n"
    ids = {it["id"] for key in ("chunks", "codes", "tables", "images") for it in result.get(key, [])}
    if node_id not in ids:
        fig, text = explain(service.settings.db_path, result)
        return fig, note + f"_`{node_id}` is not among the diffusion's results for “{query}”; its walk:_\n\n" + text
    fig, text = explain(service.settings.db_path, result, [node_id], limit=30)
    return fig, note + f"Searched for “{query}”.\n\n" + text


# which method is the default and why, where a method is chosen (measured: docs/benchmarks.md)
METHOD_INFO = ("**Best (graph)** (diffusion) is the default: one score per section weighs dense similarity, exact words and "
               "identifiers, the page, the next hop a top passage (with the question) names, links between pages "
               "and the facts' graph; where dense agrees with the facts' walk, that walk also fills some places "
               "after the first two. \"Why\" lists what made each section's score. **Similar text only** (dense) is "
               "vector search alone. **Graph walk** (ppr) is HippoRAG 2's walk, kept as an experimental comparison: "
               "on documentation it ranks below dense (docs/benchmarks.md, \"ppr on documentation\").")


# ---- inspector --------------------------------------------------------------------------------
def _inspector_tab(gr, chooser: Chooser) -> None:
    q = gr.Textbox(label="Question", elem_id="inspect-question")
    go = gr.Button("Run dense · ppr (experimental comparison) · diffusion side by side", variant="primary",
                   elem_id="inspect")
    gr.Markdown(f"_{METHOD_INFO}_", elem_id="method-info")
    with gr.Row():
        cols = {m: gr.Markdown(label=m, elem_id=f"inspect-{m}", latex_delimiters=NO_LATEX) for m in ("dense", "ppr", "diffusion")}
    with gr.Row():
        picture = gr.Plot(label="Diffusion: the visited subgraph (red: the path from a seed to each result)",
                          scale=3, elem_id="subgraph")
        why = gr.Markdown(label="What ranked each result", elem_id="inspect-why", latex_delimiters=NO_LATEX)
    stages = gr.JSON(label="Stage by stage (diffusion)")

    def inspect(question, *picked):
        from .graph_picture import explain

        if not question or not question.strip():
            raise gr.Error("Type a question first.")
        try:
            service, _ = chooser.split(picked)
            results = {m: service.retrieve(question, {"method": m, "verbose": True}) for m in cols}
        except Exception as exc:  # noqa: BLE001
            raise _err(exc) from None
        mds = [_column_md(m, r) for m, r in results.items()]
        fig, text = explain(service.settings.db_path, results["diffusion"])
        return (*mds, fig, "#### Why each diffusion result: the score that ranked it, what made it, the walk\n" + text,
                _stage_summary(service, results["diffusion"]))

    go.click(inspect, [q, *chooser.inputs], [*cols.values(), picture, why, stages], concurrency_limit=4,
             api_name="inspect")
    q.submit(inspect, [q, *chooser.inputs], [*cols.values(), picture, why, stages], concurrency_limit=4,
             api_name=False)


def _column_md(method: str, r: dict) -> str:
    t = r["timing"]
    title = f"{method} (experimental comparison)" if method == "ppr" else method
    head = f"### {title}\n" + " · ".join(f"{k} {1000 * v:.0f} ms" for k, v in t.items()) + "\n\n"
    if r.get("note"):  # ppr's: an experimental comparison
        head += f"_{r['note']}_\n\n"
    return head + references_md(r)


def _labels(service: Service, rowids: list[str]) -> dict[str, tuple[str, str]]:
    from ..store import Store

    with Store(service.settings.db_path, readonly=True) as st:
        return {str(n["rowid"]): (n["id"], n["type"]) for n in st.nodes.by_rowids([int(r) for r in rowids])}


def _stage_summary(service: Service, r: dict) -> dict:
    trace = r.get("trace", {})
    st3 = trace.get("stage3", {})
    seeds = [s for s, _ in st3.get("seeds", [])][:20]
    labels = _labels(service, seeds + [x for rt in trace.get("routes", {}).values()
                                      for x in map(str, rt["rowids"][:10])])
    routes = {k: [{"node": labels.get(str(x), (str(x),))[0], "cosine": c, "rerank": s}
                  for x, c, s in zip(v["rowids"][:10], v["cosine"], v["score"])]
              for k, v in trace.get("routes", {}).items() if k != "fact"}
    return {"timing_s": r["timing"], "stage1_recall_and_stage2_rerank": routes,
            "exact_entity_matches": [labels.get(x, (x,))[0] for x in trace.get("exact_entities", [])],
            "stage3_seeds": [(labels.get(s, (s,))[0], w) for s, w in st3.get("seeds", [])[:20]],
            "stage3_expansions": st3.get("expansions"), "stage3_stop_reason": st3.get("stop_reason"),
            "stage4_quotas": {k: len(r[k]) for k in ("chunks", "codes", "tables", "images")}}


# ---- index ------------------------------------------------------------------------------------
def _index_tab(gr, service: Service, indexes: Indexes) -> None:
    read_only = " (read-only demo: actions need the admin secret)" if service.read_only else ""
    gr.Markdown("### Build and enrich the index" + read_only)
    secret = gr.Textbox(label="Admin secret", type="password", visible=service.read_only)
    with gr.Row():
        docs = gr.Textbox(label="Docs folder on the server", value=str(service.settings.docs_root or demo_docs()))
        url_t = gr.Textbox(label="Source URL template", value=service.settings.url_template,
                           placeholder="https://github.com/OWNER/REPO/blob/master/{path}#L{line}")
    upload_zip = gr.File(label="…or upload a zip of Markdown docs", file_types=[".zip"])
    with gr.Row():
        buttons = {name: gr.Button(label, elem_id=f"job-{name}") for name, label in (
            ("index", "Parse + embed"), ("summaries", "Summaries"), ("captions", "Image captions"),
            ("openie", "OpenIE"), ("synonymy", "Synonymy edges"))}
        cancel = gr.Button("Cancel", variant="stop")
    log = gr.Markdown(elem_id="job-log")
    with gr.Row():
        stats_btn = gr.Button("Refresh stats")
        snap_btn = gr.Button("Download index snapshot")
    stats = gr.JSON(label="Index stats")
    snap_file = gr.File(label="Snapshot")
    with gr.Row():
        upload_db = gr.File(label="Open a teammate's index file", file_types=[".db", ".sqlite"])
        open_btn = gr.Button("Validate and open")
    with gr.Accordion("LLM endpoint (OpenAI protocol)", open=False):
        llm_url = gr.Textbox(label="Base URL", value=service.settings.llm_base_url)
        llm_model = gr.Textbox(label="Model", value=service.settings.llm_model)
        llm_key = gr.Textbox(label="API key (write-only)", type="password", value="")
        save_llm = gr.Button("Save LLM settings")
    saved = gr.Markdown()

    for name, btn in buttons.items():
        btn.click(_job_runner(service, name), [secret, docs, url_t, upload_zip], [log], concurrency_limit=1,
                  concurrency_id="writer", api_name=f"job_{name}")
    cancel.click(_canceller(service), [secret], [log], api_name="cancel")
    stats_btn.click(lambda: service.stats(), None, stats, api_name="stats")
    snap_btn.click(_snapshotter(service), [secret], snap_file, api_name="snapshot")
    open_btn.click(_opener(service), [secret, upload_db], [saved], api_name="open_index")
    save_llm.click(_llm_saver(service, indexes), [secret, llm_url, llm_model, llm_key], [saved, llm_key], api_name="llm_settings")


def _job_runner(service: Service, name: str):
    import gradio as gr

    def run(secret, docs, url_template, upload, progress=gr.Progress()):
        try:
            service.check_admin(secret)
            if name == "index" and upload is not None:
                target = Path(service.settings.db_path).parent / "uploads" / Path(upload).stem
                docs = str(safe_extract_zip(Path(upload), target, service.settings.max_upload_bytes))
            work = (lambda: service.index_docs(Path(docs or service.settings.docs_root or ""), url_template, secret)) \
                if name == "index" else (lambda: service.enrich(name, secret))
        except Exception as exc:  # noqa: BLE001
            raise _err(exc) from None
        holder: dict = {}
        thread = threading.Thread(target=lambda: holder.update(job=_safe(work)), daemon=True)
        thread.start()
        while thread.is_alive():
            job = service.job
            if job is not None and job.progress:
                stage, (done, total) = list(job.progress.items())[-1]
                progress((done, max(total, 1)), desc=stage)
            yield _job_md(name, job, running=True)
            time.sleep(0.5)
        result = holder.get("job")
        if isinstance(result, Exception):
            raise _err(result)
        yield _job_md(name, result, running=False)

    return run


def _safe(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - shown to the user by the runner
        return exc


def _job_md(name: str, job, running: bool) -> str:
    if job is None:
        return f"**{name}**: starting…"
    lines = [f"**{name}**: {'running' if running else ('failed: ' + job.error if job.error else 'done')} "
             f"({time.time() - job.started:.0f} s)"]
    lines += [f"- {stage}: {d} / {t}" for stage, (d, t) in job.progress.items()]
    if job.counts:
        lines += [f"- {k}: {v}" for k, v in job.counts.items() if not isinstance(v, (list, dict))]
        for k, v in job.counts.items():
            if isinstance(v, dict):
                lines.append(f"- {k}: " + ", ".join(f"{a}={b}" for a, b in v.items()))
    return "\n".join(lines)


def _canceller(service: Service):
    def cancel(secret):
        try:
            return f"**{service.cancel_job(secret)}**"
        except Exception as exc:  # noqa: BLE001
            raise _err(exc) from None

    return cancel


def _snapshotter(service: Service):
    def snapshot(secret):
        try:
            service.check_admin(secret)
            return str(service.snapshot())
        except Exception as exc:  # noqa: BLE001
            raise _err(exc) from None

    return snapshot


def _opener(service: Service):
    def open_file(secret, upload):
        if upload is None:
            return "Choose an index file first."
        try:
            stats = service.open_index(Path(upload), secret)
        except Exception as exc:  # noqa: BLE001
            raise _err(exc) from None
        return f"Opened: {stats['nodes']}"

    return open_file


def _llm_saver(service: Service, indexes: Indexes):
    def save(secret, url, model, key):
        try:
            service.check_admin(secret)
        except Exception as exc:  # noqa: BLE001
            raise _err(exc) from None
        indexes.set_llm(url.strip(), model.strip(), key)  # every index answers with the one model
        return f"LLM: {model or '(none)'} at {url or '(none)'}; key {'set' if service.settings.llm_api_key else 'not set'}", ""

    return save
