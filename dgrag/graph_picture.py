"""Draw the diffusion's visited subgraph as a PNG (PIL only): node types coloured, the
expansion tree as grey edges, the paths to the returned items in red."""
from __future__ import annotations

import io

import numpy as np

COLOURS = {"file": (31, 119, 180), "chunk": (44, 160, 44), "code": (255, 127, 14), "table": (148, 103, 189),
           "image": (214, 39, 40), "entity": (140, 140, 140)}


def layout(n: int, edges: list[tuple[int, int]], seed: int = 0, iters: int = 120) -> np.ndarray:
    """A small force-directed layout (Fruchterman-Reingold) in the unit square."""
    rng = np.random.default_rng(seed)
    pos = rng.random((n, 2))
    if n < 2:
        return pos
    k = 1.0 / np.sqrt(n)
    e = np.array(edges, dtype=np.int64).reshape(-1, 2)
    for i in range(iters):
        delta = pos[:, None, :] - pos[None, :, :]
        dist = np.maximum(np.linalg.norm(delta, axis=2), 1e-3)
        disp = (delta / dist[..., None] * (k * k / dist)[..., None]).sum(axis=1)
        if e.size:
            d = pos[e[:, 0]] - pos[e[:, 1]]
            dl = np.maximum(np.linalg.norm(d, axis=1), 1e-3)
            f = d / dl[:, None] * (dl * dl / k)[:, None]
            np.add.at(disp, e[:, 0], -f)
            np.add.at(disp, e[:, 1], f)
        temp = 0.1 * (1 - i / iters)
        length = np.maximum(np.linalg.norm(disp, axis=1), 1e-9)
        pos += disp / length[:, None] * np.minimum(length, temp)[:, None]
    pos -= pos.min(axis=0)
    return pos / np.maximum(pos.max(axis=0), 1e-9)


def draw(nodes: list[tuple[str, str]], edges: list[tuple[str, str]], highlight: set[tuple[str, str]],
         size: int = 720) -> bytes:
    """nodes: (node key, type); edges and highlight: pairs of node keys. Returns PNG bytes."""
    from PIL import Image, ImageDraw

    index = {key: i for i, (key, _) in enumerate(nodes)}
    pairs = [(index[a], index[b]) for a, b in edges if a in index and b in index]
    pos = layout(len(nodes), pairs) * (size - 60) + 30
    img = Image.new("RGB", (size, size + 28), "white")
    d = ImageDraw.Draw(img)
    for a, b in pairs:
        hot = (nodes[a][0], nodes[b][0]) in highlight or (nodes[b][0], nodes[a][0]) in highlight
        d.line([tuple(pos[a]), tuple(pos[b])], fill=(220, 40, 40) if hot else (200, 200, 200), width=3 if hot else 1)
    for i, (_, kind) in enumerate(nodes):
        x, y = pos[i]
        r = 6 if kind in ("chunk", "code", "table", "image") else 4
        d.ellipse([x - r, y - r, x + r, y + r], fill=COLOURS.get(kind, (0, 0, 0)))
    x = 8
    for kind, colour in COLOURS.items():
        d.ellipse([x, size + 8, x + 12, size + 20], fill=colour)
        d.text((x + 16, size + 8), kind, fill=(0, 0, 0))
        x += 90
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()
