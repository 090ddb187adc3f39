"""The inspector's picture of one diffusion and the plain-language "why" of each result.

`picture` picks a bounded subgraph out of a verbose retrieval trace (the paths to the chosen
results first, then the walk's tree around them, then its other subtrees), `figure` draws it with plotly
(an interactive figure that gr.Plot renders with the plotly.js Gradio ships: no CDN), laid out
by igraph, `ranked_lines` tells what ranked a result (the features and their contributions
to the score that ranked it) and `why` in one line how the walk reached it. Everything but
`describe` and `figure` is pure, on the trace's row ids and the node rows."""
from __future__ import annotations

import html
import math
import textwrap
from dataclasses import asdict, dataclass, field
from pathlib import Path

COLOURS = {"file": "#1f77b4", "chunk": "#2ca02c", "code": "#ff7f0e", "table": "#9467bd", "image": "#e377c2",
           "entity": "#7f7f7f"}
EDGE_COLOURS = {"contains": "#9ecae1", "jump": "#c6dbef", "passage": "#bcbddc", "semantic": "#a1d99b",
                "synonymy": "#fdae6b", "fact": "#636363", "api": "#6baed6", "other": "#d9d9d9"}
HOT = "#e41a1c"
MAX_NODES = 60  # more labels than this and the picture stops explaining


@dataclass(frozen=True)
class Edge:
    a: str
    b: str
    type: str       # an edge type of the graph, or "fact" (head entity -> tail entity)
    cost: float     # traversal cost; nan for a fact
    label: str      # what the picture writes on it: "passage 0.20", or a fact's relation
    hot: bool       # on the path from a seed to a chosen result


@dataclass
class Picture:
    nodes: list[str]                                  # row ids, drawn in this order
    kinds: dict[str, str]
    labels: dict[str, str]
    hover: dict[str, str]
    edges: list[Edge] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)  # the chosen results, drawn larger


KINDS = ("chunks", "codes", "tables", "images")


def describe(db_path: Path, stage3: dict, ids: list[str]) -> tuple[dict[str, dict], dict[int, dict], dict[str, str]]:
    """The node rows (by row id string) and fact rows (by fact rowid) a trace names, and the
    row ids of the node ids `ids` (the results)."""
    from ..store import Store

    rowids = set(stage3.get("visited", [])) | {n for p in stage3.get("paths", {}).values() for n in p}
    facts = {w["fact"] for w in stage3.get("seed_why", {}).values() if "fact" in w}
    with Store(db_path, readonly=True) as st:
        of = {i: str(r) for i, r in st.nodes.rowids_of(ids).items()}
        rowids |= set(of.values())
        nodes = {str(n["rowid"]): n for n in st.nodes.by_rowids(sorted(int(r) for r in rowids))}
        fact_rows = {f.rowid: asdict(f) for f in st.semantic.facts_by_rowids(sorted(facts))}
    return nodes, fact_rows, of


def explain(db_path: Path, result: dict, chosen: list[str] | None = None, limit: int = MAX_NODES):
    """(plotly figure or None, Markdown "why" lines) for a verbose diffusion result: every
    result, or only the node ids in `chosen`, in rank order (`ranked_lines`), with the walk's
    path to each drawn."""
    st3 = (result.get("trace") or {}).get("stage3") or {}
    items = [(k, place, it) for k in KINDS for place, it in enumerate(result.get(k, []), 1)
             if not chosen or it["id"] in chosen]
    if not st3.get("visited") or not items:
        return None, "_Nothing to explain: run a diffusion retrieval that returns results._"
    nodes, facts, rowid = describe(db_path, st3, [it["id"] for _, _, it in items])
    targets = [rowid[it["id"]] for _, _, it in items if it["id"] in rowid]
    lines = [line for kind, place, it in items if it["id"] in rowid
             for line in ranked_lines(st3, nodes, facts, rowid[it["id"]], kind, place, it)]
    pic = picture(st3, nodes, facts, targets, limit)
    title = (f"{len(pic.nodes)} of {len(st3['visited'])} visited nodes · red: the path from a seed to "
             + ("the chosen result" if chosen else "each result"))
    return figure(pic, title), "\n".join(lines)


# a place not given by the score alone (retrieve/methods.py `_why`)
PLACED = {"ppr": " · a place given to the PPR walk (`rank_ppr_every`)",
          "first_without_bridge": " · first: the best without `bridge` (a next hop ranks after what matches)"}


def ranked_lines(stage3: dict, nodes: dict[str, dict], facts: dict[int, dict], target: str, kind: str,
                 place: int, item: dict) -> list[str]:
    """The "why" of one result (`place` in its list, `kind`): a section the ranking scored gets
    the score that ranked it and, on the next line, the features that made that score, each as
    weight x value, largest first (they sum to it), then the walk's path to it where the walk
    reached it; a code block, table or image, ranked among its kind by the walk's own score,
    gets that path and score."""
    head = f"- **#{place}** `{item['id']}`"
    ranked = item.get("why")
    if kind != "chunks" or not ranked:
        return [f"{head}: {_md(why(stage3, nodes, facts, target))}"]
    placed = PLACED.get(ranked.get("placed_by"), "")
    rerank = f" · then reordered by the {ranked['reranked_by']} rerank" if ranked.get("reranked_by") else ""
    out = [f"{head} {_md(_name(nodes.get(target), target))} · rank score **{ranked['score']:.3f}**{placed}{rerank}",
           "  - " + " · ".join(f"{c['feature']} {c['contribution']:+.3f} = {c['weight']:g} × {c['value']:.3f}"
                               for c in ranked["contributions"])]
    if stage3.get("paths", {}).get(target):
        out.append(f"  - the walk: {_md(why(stage3, nodes, facts, target, with_score=False))}")
    return out


def _md(text: str) -> str:
    """Document text inside Markdown: its own markup characters shown, not interpreted."""
    return "".join("\\" + c if c in "\\`*_[]<>#|" else c for c in text)


def short_label(node: dict | None, width: int = 28) -> str:
    """An entity's name, a page's title, or the last two steps of a breadcrumb, shortened."""
    if node is None:
        return "?"
    crumb = node.get("breadcrumb") or node.get("id", "?")
    if node.get("type") == "entity":
        text = node.get("entity_name") or crumb
    elif node.get("type") == "file":
        text = crumb.split(" / ")[0]
    else:
        text = " / ".join(crumb.split(" / ")[-2:])
    return text if len(text) <= width else text[:width - 1] + "…"


def fact_text(fact: dict | None) -> str:
    """A fact as its triple, "(head, relation, tail)": the form the facts table stores."""
    if not fact:
        return "(a fact no longer in the index)"
    text = fact.get("text") or f"({fact['head']}, {fact['relation']}, {fact['tail']})"
    return text if text.startswith("(") else f"({text})"


def _hops(stage3: dict) -> dict[tuple[str, str], tuple[str, float]]:
    out = {}
    for a, b, kind, cost in stage3.get("hops", []):
        out[(a, b)] = out[(b, a)] = (kind, cost)
    return out


def _chosen(stage3: dict, targets: list[str], limit: int) -> list[str]:
    """Row ids to draw, at most `limit` (or the targets, if more): the paths to `targets`;
    then the walk's tree around them (visited nodes whose parent or child is drawn); then,
    while there is room, the next subtree the walk grew elsewhere, so that the rest of the
    picture shows hops too, not a grid of lone seeds; lone seeds last. Expansion order
    throughout."""
    keep: dict[str, None] = {}
    for t in targets:
        for n in stage3.get("paths", {}).get(t, [t]):
            keep.setdefault(n, None)
    adjacent: dict[str, set[str]] = {}
    for a, b in stage3.get("edges", []):
        adjacent.setdefault(a, set()).add(b)
        adjacent.setdefault(b, set()).add(a)
    visited = stage3.get("visited", [])
    while len(keep) < limit:
        _grow(keep, visited, adjacent, limit)
        start = next((v for v in visited if v not in keep and v in adjacent), None)
        if start is None or len(keep) >= limit:
            break
        keep[start] = None
    for v in visited:
        if len(keep) >= limit:
            break
        keep.setdefault(v, None)
    return list(keep)[:max(limit, len(targets))]


def _grow(keep: dict[str, None], visited: list[str], adjacent: dict[str, set[str]], limit: int) -> None:
    """Add visited nodes joined to a kept one by a tree edge, until none is left or `limit`."""
    grew = True
    while grew and len(keep) < limit:
        grew = False
        for v in visited:
            if len(keep) >= limit:
                return
            if v not in keep and adjacent.get(v, set()) & keep.keys():
                keep[v] = None
                grew = True


def picture(stage3: dict, nodes: dict[str, dict], facts: dict[int, dict], targets: list[str],
            limit: int = MAX_NODES) -> Picture:
    """The subgraph to draw for `targets` (result row ids) out of a verbose stage-3 trace."""
    drawn = _chosen(stage3, targets, limit)
    inside = set(drawn)
    hot = {frozenset(pair) for t in targets for p in [stage3.get("paths", {}).get(t, [])] for pair in zip(p, p[1:])}
    hops = _hops(stage3)
    edges, seen = [], set()
    for a, b in stage3.get("edges", []) + [pair for t in targets for p in [stage3.get("paths", {}).get(t, [])]
                                           for pair in zip(p, p[1:])]:
        if a in inside and b in inside and frozenset((a, b)) not in seen:
            seen.add(frozenset((a, b)))
            kind, cost = hops.get((a, b), ("other", float("nan")))
            edges.append(Edge(a, b, kind, cost, f"{kind} {cost:.2f}", frozenset((a, b)) in hot))
    for f in facts.values():  # a matched fact joins its two entities
        a, b = str(f["head"]), str(f["tail"])
        if a in inside and b in inside and a != b:
            edges.append(Edge(a, b, "fact", float("nan"), f["relation"], False))
    kinds = {n: (nodes.get(n) or {}).get("type", "entity") for n in drawn}
    return Picture(drawn, kinds, {n: short_label(nodes.get(n)) for n in drawn},
                   {n: _hover(n, nodes.get(n), stage3) for n in drawn}, edges, [t for t in targets if t in inside])


def _hover(rowid: str, node: dict | None, stage3: dict) -> str:
    """What hovering a node shows: its type and breadcrumb, score, similarity, text (trimmed)."""
    if node is None:
        return f"node {rowid}"
    score = stage3.get("score", {}).get(rowid)
    sim = stage3.get("similarity", {}).get(rowid)
    figures = " · ".join(x for x in (f"walk score {score:.3f}" if score is not None else "",
                                     f"similarity {sim:.3f}" if sim is not None else "") if x)
    text = " ".join((node.get("text") or "").split())
    text = text if len(text) <= 280 else text[:279] + "…"
    body = "<br>".join(html.escape(line) for line in textwrap.wrap(text, 70))
    return f"<b>{html.escape(node['type'])}</b> {html.escape(node.get('breadcrumb') or node.get('entity_name') or '')}<br>{figures}<br>{body}"


def why(stage3: dict, nodes: dict[str, dict], facts: dict[int, dict], target: str, with_score: bool = True) -> str:
    """How the walk reached `target`, in one line: where its seed came from, then each hop
    with its edge type and cost, then the path's total cost and (`with_score`) the walk's score,
    which ranks a code block, table or image among its kind (a section's rank score is
    `ranked_lines`')."""
    path = stage3.get("paths", {}).get(target, [])
    score = stage3.get("score", {}).get(target) if with_score else None
    tail = f" · walk score {score:.3f}" if score is not None else ""
    if not path:
        return (f"{_name(nodes.get(target), target)} was not reached by the walk: the graph's PageRank from the "
                f"matched facts ranked it in{tail}")
    hops = _hops(stage3)
    parts = [_seed_phrase(stage3.get("seed_why", {}).get(path[0]), nodes.get(path[0]), path[0], facts)]
    total = 0.0
    for a, b in zip(path, path[1:]):
        kind, cost = hops.get((a, b), ("other", float("nan")))
        total += cost
        parts.append(f"{_name(nodes.get(b), b)} ({kind} {cost:.2f})")
    return " → ".join(parts) + (f" · path cost {total:.2f}" if len(path) > 1 else "") + tail


def _name(node: dict | None, rowid: str) -> str:
    return f"{node['type']} “{short_label(node, 48)}”" if node else f"node {rowid}"


def _seed_phrase(reason: dict | None, node: dict | None, rowid: str, facts: dict[int, dict]) -> str:
    name = _name(node, rowid)
    via = (reason or {}).get("via")
    if via == "question":
        return f"{name} matched the question directly, similarity {reason['similarity']:.2f}"
    if via == "name":
        return f"{name}, named in the question"
    if via == "fact":
        return f"fact {fact_text(facts.get(reason['fact']))} → {name}"
    if via == "fact source":
        return f"fact {fact_text(facts.get(reason['fact']))}, read from {name}"
    return f"{name} (a seed)"


def layout(pic: Picture) -> dict[str, tuple[float, float]]:
    """Kamada-Kawai (igraph) from a fixed circle: the same picture for the same trace."""
    import igraph

    index = {n: i for i, n in enumerate(pic.nodes)}
    g = igraph.Graph(n=len(pic.nodes), edges=[(index[e.a], index[e.b]) for e in pic.edges])
    start = [[math.cos(2 * math.pi * i / max(1, g.vcount())), math.sin(2 * math.pi * i / max(1, g.vcount()))]
             for i in range(g.vcount())]
    coords = g.layout_kamada_kawai(seed=start).coords if g.vcount() > 1 else [[0.0, 0.0]] * g.vcount()
    return {n: (float(x), float(y)) for n, (x, y) in zip(pic.nodes, coords)}


def figure(pic: Picture, title: str = ""):
    """The plotly figure: one trace per edge type (hover: type and cost), the highlighted paths
    in red with their edge type and cost written on them, one trace per node type (labels
    beside the nodes, hover: text and score), the chosen results drawn larger."""
    import plotly.graph_objects as go

    pos = layout(pic)
    fig = go.Figure()
    for kind in sorted({e.type for e in pic.edges if not e.hot}):
        _edge_trace(fig, go, pos, [e for e in pic.edges if e.type == kind and not e.hot], kind,
                    EDGE_COLOURS.get(kind, EDGE_COLOURS["other"]), 1.2)
    hot = [e for e in pic.edges if e.hot]
    if hot:
        _edge_trace(fig, go, pos, hot, "path to a result", HOT, 3.5)
        fig.add_trace(go.Scatter(x=[(pos[e.a][0] + pos[e.b][0]) / 2 for e in hot],
                                 y=[(pos[e.a][1] + pos[e.b][1]) / 2 for e in hot], mode="text",
                                 text=[e.label for e in hot], textfont={"size": 9, "color": HOT},
                                 hoverinfo="skip", showlegend=False, name="path labels"))
    targets = set(pic.targets)
    for kind, colour in COLOURS.items():
        ns = [n for n in pic.nodes if pic.kinds[n] == kind]
        if not ns:
            continue
        fig.add_trace(go.Scatter(
            x=[pos[n][0] for n in ns], y=[pos[n][1] for n in ns], mode="markers+text", name=kind,
            text=[pic.labels[n] for n in ns], textposition="top center", textfont={"size": 10},
            hovertext=[pic.hover[n] for n in ns], hoverinfo="text", customdata=ns,
            marker={"color": colour, "size": [18 if n in targets else 10 for n in ns],
                    "line": {"width": [3 if n in targets else 0.5 for n in ns],
                             "color": [HOT if n in targets else "white" for n in ns]}}))
    fig.update_layout(title={"text": title, "font": {"size": 13}}, height=620, showlegend=True,
                      margin={"l": 10, "r": 10, "t": 40, "b": 10}, plot_bgcolor="white", hovermode="closest",
                      legend={"orientation": "h", "y": -0.02}, dragmode="pan",
                      xaxis={"visible": False}, yaxis={"visible": False})
    return fig


def _edge_trace(fig, go, pos, edges: list[Edge], name: str, colour: str, width: float) -> None:
    """Edges of one kind as one line trace (segments split by None), plus invisible midpoints
    that carry each edge's hover text."""
    xs, ys = [], []
    for e in edges:
        xs += [pos[e.a][0], pos[e.b][0], None]
        ys += [pos[e.a][1], pos[e.b][1], None]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=name, hoverinfo="skip",
                             line={"color": colour, "width": width}))
    fig.add_trace(go.Scatter(x=[(pos[e.a][0] + pos[e.b][0]) / 2 for e in edges],
                             y=[(pos[e.a][1] + pos[e.b][1]) / 2 for e in edges], mode="markers",
                             marker={"size": 6, "color": colour, "opacity": 0.0}, showlegend=False,
                             hovertext=[e.label if e.type == "fact" else f"{e.type} edge, cost {e.cost:.2f}"
                                        for e in edges], hoverinfo="text", name=f"{name} (hover)"))
