"""The final context's images as chat image parts, read from the index file's BLOBs.

At most `chat_max_images`, the best-scored first; an image whose longer side exceeds
`chat_image_max_px` or whose bytes exceed `chat_image_max_bytes` (or whose format a chat
endpoint may not take) is scaled down and re-encoded; one that still does not fit is skipped
with the reason. Whether to send images at all is `wants_images(settings)`.
"""
from __future__ import annotations

import io
from pathlib import Path

from ..config import Settings
from ..errors import ConfigError

SENDABLE = {"png": "image/png", "jpeg": "image/jpeg", "jpg": "image/jpeg", "webp": "image/webp"}


def wants_images(settings: Settings) -> bool:
    """`chat_images`: on, off, or auto -- on when the chat model is the model the caption step
    sends images to (llm_vision_model, else llm_model) on the same endpoint."""
    mode = (settings.chat_images or "auto").strip().lower()
    if mode not in ("auto", "on", "off"):
        raise ConfigError("chat_images must be auto, on or off")
    if mode != "auto":
        return mode == "on"
    chat_model = settings.chat_model or settings.llm_model
    vision_model = settings.llm_vision_model or settings.llm_model
    same_endpoint = not settings.chat_base_url or settings.chat_base_url.rstrip("/") == settings.llm_base_url.rstrip("/")
    return bool(chat_model) and chat_model == vision_model and same_endpoint


def image_parts(settings: Settings, db_path: Path, numbered: list[tuple[int, dict]]) -> tuple[list[dict], list[str]]:
    """Chat content parts for the images among `numbered` [(n, item)]: a caption text part
    ("Image [n]: ...") then the image part, per image. Returns (parts, notes on skipped ones)."""
    from ..backends.llm import image_part
    from ..store import Store

    images = sorted(((n, it) for n, it in numbered if it.get("type") == "image" and it.get("image_sha")),
                    key=lambda p: -(p[1].get("score") or 0.0))[:max(0, settings.chat_max_images)]
    parts: list[dict] = []
    notes: list[str] = []
    if not images:
        return parts, notes
    with Store(db_path, readonly=True) as st:
        for n, it in images:
            found = st.images.data(it["image_sha"])
            if found is None:
                notes.append(f"[{n}] image not in the index file")
                continue
            data, mime, why = bounded(found[0], found[1], settings.chat_image_max_px, settings.chat_image_max_bytes)
            if data is None:
                notes.append(f"[{n}] {why}")
                continue
            caption = (it.get("summary") or it.get("alt") or it.get("breadcrumb") or "").replace("\n", " ")[:300]
            parts.append({"type": "text", "text": f"Image [{n}] ({it.get('image_url', '')}): {caption}"})
            parts.append(image_part(data, mime))
    return parts, notes


def bounded(data: bytes, fmt: str | None, max_px: int, max_bytes: int) -> tuple[bytes | None, str, str]:
    """(bytes, mime, "") within the bounds, re-encoded when needed; (None, "", why) if impossible."""
    fmt = (fmt or "").lower()
    size = _size(data)
    if fmt in SENDABLE and size is not None and max(size) <= max_px and len(data) <= max_bytes:
        return data, SENDABLE[fmt], ""
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            im.seek(0)  # the first frame of an animation
            im = im.convert("RGBA" if im.mode in ("RGBA", "LA", "P") else "RGB")
            im.thumbnail((max_px, max_px))
            buf = io.BytesIO()
            if im.mode == "RGBA":
                im.save(buf, "PNG", optimize=True)
                mime = "image/png"
            else:
                im.save(buf, "JPEG", quality=85)
                mime = "image/jpeg"
    except Exception as exc:  # noqa: BLE001 - an unreadable image is skipped, never fatal
        return None, "", f"image not readable: {type(exc).__name__}"
    out = buf.getvalue()
    if len(out) > max_bytes:
        return None, "", f"image over {max_bytes} bytes even at {max_px} px"
    return out, mime, ""


def _size(data: bytes) -> tuple[int, int] | None:
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            return im.size
    except Exception:  # noqa: BLE001
        return None
