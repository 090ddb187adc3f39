"""Definitions and labelled fields of the offline OpenIE, read sentence by sentence.

English "X is a Y" / "X refers to Y", Chinese "X是Y" / "X指Y" / "X用于Y" / "X称为Y", aliases
"X (Y)", "Label: value" lines (a defined term, or an API reference field such as
"System capability: ..."), API reference first sentences ("Defines ...", "获取...") and
"通过X…" / "via X". `read_definitions` returns what it found; the pipeline adds it to its state."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..kernels.tokens import IDEOGRAPHS
from .openie_lexicon import (
    ACRONYM, CAMEL, CJK, EN_API_VERB, FUNCTION_WORDS, URL,
    ZH_API_VERB, ZH_DEF_BAD_END, ZH_DEF_BAD_START, ZH_STOP, ZH_SUFFIXES, normalize_entity,
)
from .openie_mentions import Mention
from .openie_packs import Lexicon
from .openie_text import valid_name

_EN_DEF = re.compile(
    r"^(?:the\s+|an?\s+)?(?P<x>[^\s,;:()][^,;:()]{0,50}?(?:\s*\([^()]{1,30}\))?)\s+"
    r"(?P<rel>is|are|refers to|refer to|means|stands for|is defined as|is known as)\s+(?:(?:essentially|basically|actually|mainly|also)\s+)?"
    r"(?P<art>(?:a|an|the|one of the)\s+)?(?P<y>[^,;:.()]{2,80})",
    re.I,
)
_EN_NP_STOP = re.compile(
    r"\s+(?:that|which|who|whose|where|when|to|for|in|on|of|with|from|by|as|and|or|but|used|"
    r"provided|designed|allowing|so|because|if|at|into|than|between|through|across|via|without|"
    r"while|including|such|based|returned|supported|defined)\b.*$", re.I)
_EN_BAD_SUBJ = {"this", "it", "that", "there", "these", "those", "they", "what", "which", "here", "the following",
                "following", "below", "above", "all", "each", "one", "other", "some", "such", "default", "result",
                "the result", "the value", "value", "return value", "the return value", "note"}
_ZH_DEF = re.compile(
    r"(?P<x>[^,，。;；:：!！?？、\n]{1,30}?)"
    r"(?P<rel>是指|指的是|是(?!否)|指(?![定出向令南针标明])|即(?![可使将便时刻])|用于|称为|表示)"
    r"(?P<y>[^,，。;；:：!！?？\n]{2,60})"
)
_TECHY = re.compile(f"[A-Z].*[A-Z]|[a-z][A-Z]|[._@$]|\\d|[{IDEOGRAPHS}]")
_ZH_Y_LEAD = re.compile(r"^(?:一(?:个|套|种|款|组|项|类|系列|些)|个|种|套|款|指|对|一)")


def _split_paren(x: str, pos: int, text: str, stop: frozenset[str]) -> tuple[str, str, int]:
    """"ECDSA-like names": "Elliptic Curve ... (ECDSA)" -> (name, alias, alias position in text)."""
    m = re.match(r"^(.+?)\s*[(（]([^()（）]{1,30})[)）]$", x)
    if not m or not valid_name(m.group(2), stop=stop):
        return x, "", -1
    apos = text.find(m.group(2), pos)
    return m.group(1).strip(), m.group(2).strip(), apos


def _clean_en_np(y: str, stop: frozenset[str]) -> str:
    if re.match(r"^(?:whether|if|how|what|which|that|when|where|why|to|not)\b", y.strip(), re.I):
        return ""
    y = _EN_NP_STOP.sub("", y.strip())
    words = y.split()[:6]
    while words and (words[-1].lower() in stop or (len(words) > 1 and re.fullmatch(
            r"[a-z]+(?:ed|ly)|corresponding|related|specified|given|provided", words[-1]))):
        words.pop()
    while words and words[0].lower() in {"a", "an", "the", "some", "set", "kind", "type", "collection"} and len(words) > 1:
        words = words[1:]
        if words and words[0].lower() == "of":
            words = words[1:]
    return " ".join(words)


def _clean_zh_np(y: str) -> str:
    y = y.strip()
    y = _ZH_Y_LEAD.sub("", y)
    if "的" in y and len(y) > 8:
        tail = y.rsplit("的", 1)[1]
        if len(tail) >= 2:
            y = tail
    y = re.sub(r"[，。,.!?！？…]+$", "", y).strip()
    if len(y) > 16:
        return ""
    return y



def _defining_label(lex: Lexicon, label: str, lkey: str) -> bool:
    """Whether "label: ..." defines the label as a term, rather than introducing a note or a list."""
    lkey_nodigit = re.sub(r"\s*\d+$", "", lkey)
    short_label = (len(CJK.findall(label)) <= 10 and len(label) <= 16) if CJK.search(label) \
        else len(label.split()) <= 4
    return (lkey not in lex.skip_labels and lkey_nodigit not in lex.skip_labels and valid_name(label, stop=lex.en_stop)
            and short_label
            and not re.search(r"[。.,，\[\]]", label)
            and not re.match(r"^(?:step|步骤|note|注意|例如|比如|e\.g|for example|如)", lkey)
            and not re.search(r"(?:包括|如下|以下|包含|为|有|是|the following|as follows|include|includes)$", lkey))


@dataclass(frozen=True)
class Definitions:
    """What the definition reader found in one chunk, in reading order: new `mentions`,
    `triples` as (priority, position, head, rel, tail), and `extra` names not found as a span
    of the text, as (surface, kind, position)."""
    mentions: tuple[Mention, ...]
    triples: tuple[tuple[int, int, str, str, str], ...]
    extra: tuple[tuple[str, str, int], ...]


def read_definitions(lex: Lexicon, text: str, topic: str, R: Mapping[str, str], mentions: Sequence[Mention],
                     sents: Sequence[tuple[int, int]], body_start: int,
                     sig_spans: Sequence[tuple[int, int]]) -> Definitions:
    """Definitions and labelled fields of a chunk's body, sentence by sentence. `mentions` (the
    candidates found so far) are read, not changed: a field's value may be one of them. `R` maps
    relation keys to the chunk language's labels."""
    reader = _DefinitionReader(lex, text, topic, R, tuple(mentions))
    reader.read(sents, body_start, sig_spans)
    return Definitions(tuple(reader.mentions), tuple(reader.triples), tuple(reader.extra))


class _DefinitionReader:
    """Reads a chunk's body sentence by sentence; collects into its own lists."""

    def __init__(self, lex: Lexicon, text: str, topic: str, R: Mapping[str, str], known: tuple[Mention, ...]):
        self.lex, self.text, self.topic, self.R, self.known = lex, text, topic, R, known
        self.mentions: list[Mention] = []
        self.triples: list[tuple[int, int, str, str, str]] = []
        self.extra: list[tuple[str, str, int]] = []

    def _valid(self, name: str) -> bool:
        return valid_name(name, stop=self.lex.en_stop)

    def read(self, sents: Sequence[tuple[int, int]], body_start: int, sig_spans: Sequence[tuple[int, int]]) -> None:
        first_sentence = True
        for s, e in sents:
            if s < body_start or any(a < e and s < b for a, b in sig_spans):
                continue
            raw_sent = self.text[s:e]
            lead = len(raw_sent) - len(raw_sent.lstrip())
            sent = raw_sent.strip().rstrip("。.!！?？;；")
            ss = s + lead
            if not sent:
                continue
            if first_sentence and self.topic:
                first_sentence = False
                self._api_verb(sent, ss)
            if self._labelled(sent, ss) or self._en_definition(sent, ss):
                continue
            self._zh_definition(sent, ss)
            self._via(sent, ss)

    def _api_verb(self, sent: str, ss: int) -> None:
        # API reference style "Defines a binary data array." / "获取待下载文件的总长度。": the topic does it
        vm_en = EN_API_VERB.match(sent)
        vm = vm_en or ZH_API_VERB.match(sent)
        if not vm:
            return
        verb = vm.group("v")
        obj = vm.group("o")
        if vm_en:
            obj = _clean_en_np(obj, self.lex.en_stop)
            if len(obj.split()) < 2 and not _TECHY.search(obj):
                obj = ""               # "Enumerates the reasons": too generic alone
        else:
            obj = _clean_zh_np(re.split(r"后|时|是否|并|且|以|来|要|需|[(（]", obj)[0])
            if len(obj) > 10:
                obj = ""
        if obj and self._valid(obj) and normalize_entity(obj) != normalize_entity(self.topic):
            opos = self.text.find(obj, ss + vm.start("o"))
            if opos >= 0:
                self.mentions.append(Mention(opos, opos + len(obj), obj, "isa_tail"))
                self.triples.append((1, opos, self.topic, verb.lower(), obj))

    def _labelled(self, sent: str, ss: int) -> bool:
        """"Label: value" / "X：definition"; True when the sentence needs no further reading."""
        lab = re.match(r"^([^:：\n(（]{1,24}?)\s*[:：]\s*(.+)$", sent)
        if not lab or URL.match(sent):
            return False
        label, value = lab.group(1).strip(), lab.group(2)
        num = re.match(r"^(?:\d+(?:\.\d+)*(?:[.、)]\s*|\s+)|[一二三四五六七八九十]+、\s*)", label)
        if num and num.end() < len(label):
            label = label[num.end():]
        lkey = normalize_entity(label)
        if lkey in self.lex.field_labels:
            self._field_values(label, value, ss + lab.start(2), ss + len(sent))
            return True
        if _defining_label(self.lex, label, lkey):
            lpos = self.text.find(label, ss)
            self.mentions.append(Mention(lpos, lpos + len(label), label, "defined"))
            self.triples.append((0, lpos, label, self.R["defined_in"], self.topic))
            return True
        return False

    def _field_values(self, label: str, value: str, vstart: int, vend: int) -> None:
        """An API reference field ("System capability: ...", "支持平台：Android、iOS"): (topic, label, value)
        for every mention in the value and every short listed part of it."""
        values = [m for m in (*self.known, *self.mentions) if vstart <= m.start < vend]
        cursor = vstart
        for part in re.split(r"[、,，;；]|\s+and\s+|\s+or\s+|和|及", value):
            part = part.strip().strip("。.")
            p = self.text.find(part, cursor) if part else -1
            if p < 0:
                continue
            cursor = p + len(part)
            words = part.split()
            if (self._valid(part) and len(part) <= 30 and len(words) <= 4
                    and not any(w.lower() in FUNCTION_WORDS for w in words)):
                self.mentions.append(Mention(p, p + len(part), part, "field_value"))
                values.append(self.mentions[-1])
        for v in values:
            self.triples.append((1, v.start, self.topic, label, v.surface))

    def _en_definition(self, sent: str, ss: int) -> bool:
        """English "X is a Y" / "X refers to Y"; True when one was read."""
        m = _EN_DEF.match(sent)
        if not m:
            return False
        x, alias, alias_pos = _split_paren(m.group("x").strip(), ss + m.start("x"), self.text, self.lex.en_stop)
        xk = normalize_entity(x)
        y = _clean_en_np(m.group("y"), self.lex.en_stop)
        rel = m.group("rel").lower()
        xw = x.split()
        name_like = all(w[:1].isupper() or not w[:1].isalpha() for w in xw)
        good_x = (xk not in _EN_BAD_SUBJ and len(xw) <= (6 if name_like else 4) and self._valid(x)
                  and not any(w.lower() in self.lex.en_stop for w in xw[1:])
                  and not (xw[0].lower() in self.lex.en_stop and len(xw) == 1)
                  and not re.match(r"^[A-Z][a-z]+s$", xw[0]) or len(xw) == 1 and CAMEL.search(x))
        yw = m.group("y").split()
        good_y = bool(y) and self._valid(y) and normalize_entity(y) != xk and (
            m.group("art") or rel not in ("is", "are") or (yw and (CAMEL.search(yw[0]) or ACRONYM.match(yw[0]))))
        if not (good_x and good_y):
            return False
        xpos = ss + m.start("x")
        self.mentions.append(Mention(xpos, xpos + len(x), x, "defined"))
        self._is_a_tail(y, ss + m.start("y"))
        rel = self.R["is_a"] if rel in ("is", "are", "is defined as", "is known as") else rel
        self.triples.append((0, xpos, x, rel, y))
        self.triples.append((0, xpos, x, self.R["defined_in"], self.topic))
        if alias:
            self.mentions.append(Mention(alias_pos, alias_pos + len(alias), alias, "quoted"))
            self.triples.append((0, xpos, x, self.R["alias"], alias))
        return True

    def _is_a_tail(self, y: str, from_pos: int) -> None:
        """Y of "X is a Y" as a mention, or as an extra name when the cleaned Y is not in the text."""
        ypos = self.text.find(y, from_pos)
        if ypos >= 0:
            self.mentions.append(Mention(ypos, ypos + len(y), y, "isa_tail"))
        else:
            self.extra.append((y, "isa_tail", from_pos))

    def _zh_definition(self, sent: str, ss: int) -> None:
        """Chinese "X是Y" / "X指Y" / "X用于Y" / "X称为Y": the first fitting one of the sentence."""
        for m in _ZH_DEF.finditer(sent):
            x, alias, alias_pos = _split_paren(m.group("x").strip(), ss + m.start("x"), self.text, self.lex.en_stop)
            # X starts at the clause start
            if m.start("x") != 0 and sent[m.start("x") - 1] not in ",，;；:：、(（ \n":
                continue
            if not x or x.startswith(ZH_DEF_BAD_START) or x[-1] in ZH_DEF_BAD_END or "的" in x:
                continue
            if x.endswith(("可能", "应该", "必须", "一定", "就是", "并不", "而不", "只是", "都是", "还是", "也是", "不是")):
                continue
            if not self._valid(x) or (len(CJK.findall(x)) > 10) or len(x.split()) > 4:
                continue
            rel = m.group("rel")
            rel = "是" if rel in ("是", "即") else "指" if rel in ("是指", "指的是", "指") else rel
            y = _clean_zh_np(m.group("y"))
            if rel == "是" and (not y or not self._valid(y)
                               or y.startswith(("否", "因为", "为了", "由", "在", "从", "不"))):
                continue
            xpos = ss + m.start("x")
            self.mentions.append(Mention(xpos, xpos + len(x), x, "defined"))
            self.triples.append((0, xpos, x, self.R["defined_in"], self.topic))
            if alias:
                self.mentions.append(Mention(alias_pos, alias_pos + len(alias), alias, "quoted"))
                self.triples.append((0, xpos, x, self.R["alias"], alias))
            if y and self._valid(y) and normalize_entity(y) != normalize_entity(x):
                self._is_a_tail(y, ss + m.start("y"))
                self.triples.append((0, xpos, x, self.R["is_a"] if rel == "是" else rel, y))
            return

    def _via(self, sent: str, ss: int) -> None:
        # "通过X…" / "via X": X as a candidate
        for m in re.finditer(r"通过(?P<x>[A-Za-z@$][A-Za-z0-9_.@$-]*(?: [A-Z][A-Za-z0-9_-]*)?|[" + IDEOGRAPHS + "]{2,8}?)(?=进行|来|实现|获取|调用|完成|可以|即可|设置|创建|,|，|。|的|$)", sent):
            x = m.group("x")
            if CJK.match(x) and not (len(x) <= 4 or x.endswith(tuple(ZH_SUFFIXES))):
                continue
            if self._valid(x) and normalize_entity(x) not in ZH_STOP:
                p = ss + m.start("x")
                self.mentions.append(Mention(p, p + len(x), x, "via"))
