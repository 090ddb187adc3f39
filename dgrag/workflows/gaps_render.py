"""The gap report written out: Markdown (the CLI's default and the Insights tab), CSV (one row
per gap, topic, one-off question, untranslated section or drifted pair: a spreadsheet's
input) and JSON (everything, the answer ids included)."""
from __future__ import annotations

import csv
import io
import json

from .gaps import GapReport

FORMATS = ("md", "csv", "json")
CSV_COLUMNS = ("kind", "rank", "count", "reasons", "examples", "nearest_sections", "lacking", "detail")


def render(report: GapReport, fmt: str, translations_only: bool = False) -> str:
    if fmt == "json":
        data = {"translations": report.translations} if translations_only else report.as_dict()
        return json.dumps(data, ensure_ascii=False, indent=2)
    if fmt == "csv":
        return csv_text(report, translations_only)
    return markdown(report, translations_only)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def markdown(report: GapReport, translations_only: bool = False) -> str:
    if translations_only:
        return translations_markdown(report.translations)
    since = f" since {report.since}" if report.since else ""
    latest = f" (the latest {report.clustered})." if report.clustered < report.asked else "."
    out = [f"# Gap report{since}", "",
           f"**{report.asked}** questions asked, **{report.answered_pct}%** answered "
           f"({report.failed} unanswered, low confidence or thumbed down). Clustered with "
           f"{report.model or 'the index embedder'} at cosine {report.link_cosine:.2f}"
           + (f", {report.language_offset:+.2f} across languages" if report.language_offset else "") + latest,
           "", "## What the docs fail to answer", ""]
    if not report.gaps:
        out.append("No failed question was asked twice on one topic." if report.failed else "Nothing failed.")
    for g in report.gaps:
        reasons = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in g["reasons"].items())
        out += [f"### {g['rank']}. {_cell(g['examples'][0])}", "",
                f"{g['count']} questions ({reasons}); mean confidence {g['mean_confidence']}; "
                f"asked {g['first_asked'][:10]} to {g['last_asked'][:10]}", ""]
        out += [f"- {_cell(q)}" for q in g["examples"]]
        near = "; ".join(f"[{_cell(s['section'])}]({s['url']})" if s["url"].startswith("http") else _cell(s["section"])
                         for s in g["nearest_sections"])
        out += ["", f"Nearest sections: {near or 'none'}",
                "They lack: " + (", ".join(g["lacking"]) or f"none of the key terms ({', '.join(g['key_terms'])})")]
        if g["comments"]:
            out.append("Comments: " + " / ".join(_cell(c) for c in g["comments"]))
        out.append("")
    if report.one_offs:
        out += ["", f"## Asked once ({len(report.one_offs)})", "", "| question | why | nearest section |",
                "|---|---|---|"]
        out += [f"| {_cell(o['question'])} | {', '.join(o['reasons'])} | {_cell(o['nearest_section'])} |"
                for o in report.one_offs[:30]]
    if report.topics:
        out += ["", "## Most asked topics", "", "| questions | failed | example | key terms | nearest section |",
                "|---:|---:|---|---|---|"]
        out += [f"| {t['count']} | {t['failed']} | {_cell(t['examples'][0])} | {', '.join(t['key_terms'])} | "
                f"{_cell(t['nearest_section'])} |" for t in report.topics]
    if report.translations:
        out += ["", translations_markdown(report.translations, level=2)]
    return "\n".join(out).rstrip() + "\n"


def translations_markdown(tr: dict | None, level: int = 1) -> str:
    h = "#" * level
    if not tr:
        return f"{h} Translation gaps\n\nThe index holds no two language trees (such as en/ and zh-cn/).\n"
    how = ", ".join(f"{n} by {k}" for k, n in tr["paired_by"].items()) or "none"
    out = [f"{h} Translation gaps", "",
           f"Trees {', '.join(tr['trees'])}: {tr['pages']} pages, {tr['pairs']} counterpart pairs ({how}); "
           f"{len(tr['no_counterpart'])} pages with no counterpart; {len(tr['drifted'])} pairs drifted; "
           f"{tr['sections_without_counterpart']} API sections with no counterpart.", ""]
    if tr["no_counterpart"]:
        out += [f"{h}# Pages with no counterpart", ""] + [f"- `{p['page']}`" for p in tr["no_counterpart"]] + [""]
    if tr["drifted"]:
        out += [f"{h}# Drifted pairs", "", "| page | headings | code blocks | only in one language | version marks |",
                "|---|---|---|---|---|"]
        for d in tr["drifted"]:
            only = "; ".join(f"{t}: " + ", ".join(f"`{_cell(x['heading'])}`" for x in v[:6])
                             + (" …" if len(v) > 6 else "") for t, v in d["only_in"].items() if v)
            marks = ", ".join(f"`{m['api']}` " + " vs ".join(m[t] or "none" for t in m if t != "api")
                              for m in d["version_marks"][:4])
            counts = lambda k: " / ".join(str(v) for v in d[k].values())  # noqa: E731
            out.append(f"| `{d['pages'][0]}` | {counts('headings')} | {counts('code_blocks')} | {only} | {marks} |")
    return "\n".join(out).rstrip() + "\n"


def csv_text(report: GapReport, translations_only: bool = False) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    if not translations_only:
        for g in report.gaps:
            w.writerow(["gap", g["rank"], g["count"], ";".join(f"{k}={n}" for k, n in g["reasons"].items()),
                        " | ".join(g["examples"]), " | ".join(s["section"] for s in g["nearest_sections"]),
                        " ".join(g["lacking"]), f"mean confidence {g['mean_confidence']}"])
        for o in report.one_offs:
            w.writerow(["one-off", "", 1, ";".join(o["reasons"]), o["question"], o["nearest_section"], "",
                        o["asked_at"]])
        for i, t in enumerate(report.topics, 1):
            w.writerow(["topic", i, t["count"], f"failed={t['failed']}", " | ".join(t["examples"]),
                        t["nearest_section"], "", " ".join(t["key_terms"])])
        w.writerow(["answered_pct", "", report.asked, "", "", "", "", report.answered_pct])
    tr = report.translations or {}
    for p in tr.get("no_counterpart", []):
        w.writerow(["no-counterpart", "", "", "", p["page"], "", "", p["tree"]])
    for d in tr.get("drifted", []):
        only = " ".join(f"{t}:{x['heading']}" for t, v in d["only_in"].items() for x in v)
        marks = " ".join(f"{m['api']}:" + "/".join(m[t] or "-" for t in m if t != "api") for m in d["version_marks"])
        w.writerow(["drifted", "", "", "", " | ".join(d["pages"]), "", only, marks])
    return buf.getvalue()
