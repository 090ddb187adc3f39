"""Read an image from inside the docs root, safely, and compute its hashes."""
from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class ImageInfo:
    sha256: str
    data: bytes
    format: str
    width: int
    height: int
    dhash: str
    phash: str


class ImageRejected(Exception):
    """Not an image, too big, outside the root, missing: the reason is the message."""


def confined(root: Path, rel: str) -> Path:
    """The real path of `rel` under `root`; symlinks leading outside are refused."""
    root_real = Path(os.path.realpath(root))
    full = Path(os.path.realpath(root_real / rel))
    if full != root_real and root_real not in full.parents:
        raise ImageRejected(f"outside the docs root: {rel}")
    return full


def read_image(root: Path, rel: str, *, max_bytes: int, max_pixels: int) -> ImageInfo:
    from PIL import Image
    import imagehash

    full = confined(root, rel)
    if not full.is_file():
        raise ImageRejected(f"missing image: {rel}")
    size = full.stat().st_size
    if size > max_bytes:
        raise ImageRejected(f"image over {max_bytes} bytes: {rel}")
    data = full.read_bytes()
    if is_svg(rel, data):  # no raster to hash or show inline; a drawio diagram is often megabytes
        raise ImageRejected(f"an SVG (vector) image is not indexed, its alt text stays in the section: {rel}")
    try:
        with Image.open(io.BytesIO(data)) as probe:
            width, height = probe.size
            fmt = (probe.format or "").lower()
            if width * height > max_pixels:
                raise ImageRejected(f"image of {width}x{height} pixels exceeds the limit: {rel}")
            probe.verify()
        with Image.open(io.BytesIO(data)) as img:
            img.seek(0)
            rgb = img.convert("RGB")
            dh, ph = str(imagehash.dhash(rgb)), str(imagehash.phash(rgb))
    except ImageRejected:
        raise
    except Exception as exc:  # noqa: BLE001 - PIL raises many kinds for bad files
        raise ImageRejected(f"not a readable image ({type(exc).__name__}): {rel}") from None
    return ImageInfo(hashlib.sha256(data).hexdigest(), data, fmt, width, height, dh, ph)


def is_svg(rel: str, data: bytes) -> bool:
    """An SVG file, by its name or by its first element (`<svg`, after an XML prolog or a comment)."""
    head = data[:1024].lstrip().lower()
    return rel.lower().endswith((".svg", ".svgz")) or head.startswith(b"<svg") or (
        head.startswith((b"<?xml", b"<!--", b"<!doctype svg")) and b"<svg" in head)


def gray_thumbnail(data: bytes, size: int = 64) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        return np.asarray(img.convert("L").resize((size, size)), dtype=np.float64)
