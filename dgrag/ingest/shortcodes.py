"""Template tags and Hugo's Markdown, as markdown-it-py rules (used by `dialects.parser`).

- a tag on its own line: `{% hint style="info" %}` (GitBook), `{{< tabs >}}` (Hugo), its
  arguments over several lines too (`{{% blocks/cover` ... `%}}`) -> a `template_tag` token
  (`template_label`: its title or label);
- Hugo: an escaped shortcode (`{{</* audio src="a.mp3" */>}}`, how a page shows a call without
  making it) reads as the call it shows (`unescape`), in prose and code alike;
- Hugo: TOML front matter between `+++` lines; a code shortcode (`{{< highlight go >}}`,
  `{{< code-toggle >}}`, `{{< code lang="go" >}}` ... its closing tag) -> a `fence` of its language
  (markup `{{<`); a shortcode inside a paragraph -> a `shortcode` token showing its title or label,
  and a link to `{{< ref "x" >}}` / `relref` a link to x.
"""
from __future__ import annotations

import re

# GitBook's integration blocks are tags too: `{% @github-files/github-code-block url="…" %}`
TEMPLATE_TAG = re.compile(r"^\s*(?:\{%-?\s*(end)?(@?\w[\w/-]*)([^%]*)%\}|\{\{[<%]\s*(/)?\s*([\w/.-]+)([^<>%]*)[>%]\}\})\s*$")
_SHORTCODE_OPEN = re.compile(r"^\{\{[<%]\s*[\w/.-]+(?:\s[^<>%]*)?$")  # one whose arguments go on below
_SHORTCODE_HEAD = re.compile(r"\s*(/)?\s*([\w/.-]+)")  # a shortcode's name, after `{{<` / `{{%`
_REF = re.compile(r"""["']?([^"'\s]+)["']?$""")  # a ref / relref's argument: the page
MAX_SHORTCODE = 2000  # characters between a shortcode's `{{<` and its `>}}`, at most
# an opening tag: a self-closing one (`{{< code-toggle config=markup.goldmark />}}`, drawn from the
# site's data) has no body, and read as an opening it would swallow the page up to the next closing tag
_CODE_SHORTCODE = re.compile(r"^\{\{<\s*(highlight|code-toggle|code)\b([^<>]*?)(?<!/)>\}\}\s*$")


_ESCAPED = re.compile(r"\{\{([<%])/\*|\*/([>%])\}\}")


def unescape(text: str) -> str:
    """Hugo's escaped shortcodes as its pages show them: `{{</* x */>}}` -> `{{< x >}}`,
    `{{%/* x */%}}` -> `{{% x %}}`."""
    if "/*" not in text and "*/" not in text:
        return text
    return _ESCAPED.sub(lambda m: ("{{" + m.group(1)) if m.group(1) else (m.group(2) + "}}"), text)


def block_line(state, line: int) -> str:
    return state.src[state.bMarks[line] + state.tShift[line]:state.eMarks[line]]


def marker(state, start: int, pattern: re.Pattern):
    """(the line, its match) where a marker may start: not indented as code."""
    if state.sCount[start] - state.blkIndent >= 4:
        return "", None
    line = block_line(state, start)
    return line, pattern.match(line)


def template_label(groups: tuple) -> tuple[str, str, bool]:
    """(tag name, its title or label, closing?) of a `{% ... %}` / `{{< ... >}}` tag."""
    end1, name1, args1, end2, name2, args2 = groups
    name, args, closing = (name1, args1, bool(end1)) if name1 else (name2, args2, bool(end2))
    m = re.search(r"""(?:title|label|name|header|caption)=["']([^"']*)["']""", args or "")
    if not m and (name or "").lower() == "tab":  # Hugo's `{{< tab "macOS" >}}`
        m = re.match(r"""\s*["']([^"']*)["']""", args or "")
    return (name or "").lower(), (m.group(1) if m else ""), closing or (name or "").lower().startswith("end")


def tag_args(text: str) -> dict[str, str]:
    """A template tag's quoted arguments: `src="a.yaml" method='post'` -> {"src": ..., "method": ...}."""
    return dict(re.findall(r"""(\w+)=["']([^"']*)["']""", text))


def openapi_label(groups: tuple) -> str:
    """GitBook's `{% openapi src="spec.yaml" path="/v1/x" method="post" %}` whose spec was not
    read (`includes` reads a file's; GitBook holds `openapi-operation`'s by name): the operation
    it shows, "API operation: POST /v1/x"."""
    args = tag_args(groups[2] or "")
    op = " ".join(p for p in (args.get("method", "").upper(), args.get("path", "")) if p)
    return f"API operation: {op}" if op else "API operation"


def shortcode_lines(state, start: int, end: int, silent: bool) -> bool:
    """Hugo: a shortcode whose arguments take several lines (`{{% blocks/cover` ... `%}}`) ->
    one `template_tag` token."""
    _, m = marker(state, start, _SHORTCODE_OPEN)
    if not m:
        return False
    close = next((j for j in range(start + 1, min(end, start + 30)) if state.isEmpty(j)
                  or re.search(r"[>%]\}\}\s*$", block_line(state, j))), None)
    if close is None or state.isEmpty(close):
        return False
    whole = " ".join(block_line(state, j).strip() for j in range(start, close + 1))
    t = TEMPLATE_TAG.match(whole)
    if not t:
        return False
    if not silent:
        tok = state.push("template_tag", "", 0)
        tok.map, tok.meta, tok.content = [start, close + 1], {"groups": t.groups()}, whole
    state.line = close + 1
    return True


def toml_front_matter(state, start: int, end: int, silent: bool) -> bool:
    """Hugo's TOML front matter: `+++` lines around it, at the page's start -> `front_matter`."""
    if start != 0 or block_line(state, 0).rstrip() != "+++":
        return False
    close = next((j for j in range(1, end) if block_line(state, j).rstrip() == "+++"), None)
    if close is None:
        return False
    if not silent:
        tok = state.push("front_matter", "", 0)
        tok.markup, tok.block, tok.map = "+++", True, [0, close + 1]
        tok.content = state.getLines(1, close, 0, False)
        tok.hidden = True
    state.line = close + 1
    return True


def shortcode_language(name: str, args: str) -> str:
    """The language of a Hugo code shortcode's body: highlight's first argument, code's `lang`
    (else its file's extension), code-toggle's TOML."""
    if name == "code-toggle":
        return "toml"
    lang = re.search(r"""\blang=["']?([\w+#-]+)""", args)
    if lang:
        return lang.group(1).lower()
    if name == "code":
        f = re.search(r"""\bfile=["']?[^"'\s]*\.(\w+)""", args)
        return f.group(1).lower() if f else ""
    first = args.split()
    return first[0].strip("\"'").lower() if first and "=" not in first[0] else ""


def code_shortcode(state, start: int, end: int, silent: bool) -> bool:
    """Hugo: `{{< highlight go >}}` ... `{{< /highlight >}}` -> a fence of that language."""
    _, m = marker(state, start, _CODE_SHORTCODE)
    if not m:
        return False
    name = m.group(1)
    closing = re.compile(r"^\{\{<\s*/\s*" + re.escape(name) + r"\s*>\}\}\s*$")
    close = next((j for j in range(start + 1, end) if closing.match(block_line(state, j))), None)
    if close is None:
        return False
    if not silent:
        tok = state.push("fence", "code", 0)
        tok.info, tok.markup, tok.map = shortcode_language(name, m.group(2)), "{{<", [start, close + 1]
        tok.content = state.getLines(start + 1, close, state.sCount[start], True)
    state.line = close + 1
    return True


def shortcode_at(src: str, pos: int) -> tuple[int, str, str, str] | None:
    """The shortcode starting at `pos`: (its end, "/" if closing, its name, its arguments), or
    None. Found with `str.find`, not a pattern: a line of `{{<` and spaces costs one scan."""
    opener = src[pos:pos + 3]
    if opener not in ("{{<", "{{%") or src.startswith("/*", pos + 3):  # escaped: text (`unescape`)
        return None
    end = src.find(">}}" if opener == "{{<" else "%}}", pos + 3, pos + 3 + MAX_SHORTCODE)
    head = _SHORTCODE_HEAD.match(src, pos + 3, end) if end >= 0 else None
    if head is None:
        return None
    return end + 3, head.group(1) or "", head.group(2), src[head.end():end].strip()


def shortcode_inline(state, silent: bool) -> bool:
    """Hugo: a link to `{{< ref "page" >}}` is a link to the page (its token's meta `ref`); any
    other shortcode in a paragraph a `shortcode` token (what it shows: its title or label)."""
    src, pos = state.src, state.pos
    if src.startswith("[", pos):
        if "refs" not in state.env:  # once a paragraph: a page without `]({{` pays no scan per `[`
            state.env["refs"] = "]({{" in src
        close = src.find("]", pos, pos + MAX_SHORTCODE) if state.env["refs"] else -1
        if close < 0 or not src.startswith("({{", close + 1):
            return False
        sc = shortcode_at(src, close + 2)
        ref = _REF.match(sc[3]) if sc and sc[2] in ("ref", "relref") else None
        tail = src.find(")", sc[0]) if sc else -1
        if not ref or tail < 0 or src[sc[0]:tail].strip():
            return False
        if not silent:
            tok = state.push("link_open", "a", 1)
            tok.attrSet("href", ref.group(1))
            tok.meta = {"ref": True}
            state.push("text", "", 0).content = src[pos + 1:close]
            state.push("link_close", "a", -1)
        state.pos = tail + 1
        return True
    sc = shortcode_at(src, pos)
    if sc is None:
        return False
    if not silent:
        tok = state.push("shortcode", "", 0)
        _, tok.content, _ = template_label((None, None, None, sc[1], sc[2], sc[3]))
        tok.markup = src[pos:sc[0]]
    state.pos = sc[0]
    return True
