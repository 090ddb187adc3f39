"""One operation of an OpenAPI spec as the Markdown a reader of the page sees.

GitBook's `{% openapi src="spec.yaml" path="/v1/x" method="post" %}` block renders the
operation from a spec file in the repository: its summary and description, parameters, request
body fields and responses. `Includes` reads the spec (within the include root, as any include)
and puts this text in the block's place, so the section is indexed with what the published page
shows. Bold lines, not headings: the operation stays inside its section.
"""
from __future__ import annotations

from typing import Any

import yaml

MAX_FIELDS = 60      # request-body fields listed, at most (nested objects flattened)
MAX_DEPTH = 4        # nesting of objects and `$ref`s followed
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


def _ref(spec: dict, node: Any, depth: int = 0) -> Any:
    """A schema with its local `$ref` (`#/components/schemas/X`) followed."""
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < MAX_DEPTH:
        target: Any = spec
        for key in node["$ref"].lstrip("#/").split("/"):
            target = target.get(key) if isinstance(target, dict) else None
        node, depth = target, depth + 1
    return node if isinstance(node, dict) else {}


def _cell(text: Any) -> str:
    return " ".join(str(text or "").split()).replace("|", "\\|")


def _fields(spec: dict, schema: dict, prefix: str, depth: int, out: list[str]) -> None:
    schema = _ref(spec, schema)
    required = set(schema.get("required") or [])
    for name, prop in (schema.get("properties") or {}).items():
        if len(out) >= MAX_FIELDS:
            return
        prop = _ref(spec, prop)
        kind = prop.get("type") or ("object" if prop.get("properties") else "")
        out.append(f"| `{prefix}{name}` | {_cell(kind)} | {'yes' if name in required else ''} | "
                   f"{_cell(prop.get('description'))} |")
        if depth < MAX_DEPTH and prop.get("properties"):
            _fields(spec, prop, f"{prefix}{name}.", depth + 1, out)
        elif depth < MAX_DEPTH and isinstance(prop.get("items"), dict):
            _fields(spec, prop["items"], f"{prefix}{name}[].", depth + 1, out)


def operation(spec_text: str, path: str, method: str) -> list[str] | None:
    """The operation's Markdown lines, or None when the spec does not hold it."""
    try:
        spec = yaml.safe_load(spec_text)
    except yaml.YAMLError:
        return None
    op = ((spec or {}).get("paths") or {}).get(path) if isinstance(spec, dict) else None
    op = op.get(method.lower()) if isinstance(op, dict) and method.lower() in METHODS else None
    if not isinstance(op, dict):
        return None
    lines = [f"**{method.upper()} {path}**" + (f": {_cell(op['summary'])}" if op.get("summary") else ""), ""]
    if op.get("description"):
        lines += [str(op["description"]).strip(), ""]
    params = [_ref(spec, p) for p in op.get("parameters") or []]
    if params:
        lines += ["Parameters:", "", "| name | in | type | required | description |", "|---|---|---|---|---|"]
        lines += [f"| `{_cell(p.get('name'))}` | {_cell(p.get('in'))} | {_cell(_ref(spec, p.get('schema')).get('type'))} | "
                  f"{'yes' if p.get('required') else ''} | {_cell(p.get('description'))} |" for p in params]
        lines.append("")
    body = _ref(spec, op.get("requestBody"))
    content = body.get("content") if isinstance(body.get("content"), dict) else {}
    media = next(iter(content.values()), {}) if content else {}
    fields: list[str] = []
    _fields(spec, (media or {}).get("schema") or {}, "", 0, fields)
    if fields:
        lines += ["Request body:", "", "| field | type | required | description |", "|---|---|---|---|", *fields, ""]
    responses = op.get("responses") if isinstance(op.get("responses"), dict) else {}
    if responses:
        lines += ["Responses:", "", "| status | description |", "|---|---|"]
        lines += [f"| {_cell(code)} | {_cell(_ref(spec, r).get('description'))} |" for code, r in responses.items()]
        lines.append("")
    return lines
