"""Chinese numbered headings (第一章, 一、, （一）, 1., 1.1, (1)) recognised in plain lines, with levels.

Chinese documents rarely use heading styles: policies, notices and manuals mark their structure with
numbering. A line is a heading when it starts with one of these markers, is short, does not read as a
sentence (no closing 。；，), and its number continues the sequence of its kind (二、 only after 一、,
1.2 only after 1.1 under 1.), which rules out 「1.5倍」, dates and stray numbers at a line start. A run
of numbered lines introduced by a colon (「需提交以下材料：」) is a list, not headings.

Nesting: 「第X编/章/节」 are sections (编 > 章 > 节); inside each, the other kinds (一、, （一）, 1., 1.1, (1))
nest by order of first appearance, so a notice numbered only 一、/（一） gets levels 1 and 2 and one that
starts with （一） puts it outermost. 「第X条」 is an article: it stands inside whatever heading is open and
closes none of them (「一、交通费 / 第三条 … / 二、住宿费」 keeps 第三条 under 一、); ``feed`` reports it at the
level below the open headings, but it opens no section (the chunker keeps it as the first words of its
article's text, ``is_article``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from knowledge.parsers.types import Block

_CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_CN_UNITS = {"十": 10, "百": 100}
_CN_NUM = r"[零〇一二两三四五六七八九十百]+"
_NUM = rf"(?:{_CN_NUM}|\d{{1,3}})"
_SPACE = r"[ \t\u3000]"

# Conventional rank of each kind (lower is outer); only the sections' (编 > 章 > 节) decide the nesting, the
# others nest by first appearance (``HeadingDetector.level_for``).
_RANKS = {"part": 5, "chapter": 10, "section": 20, "article": 30, "cn": 40, "cn_paren": 50, "arabic": 60, "arabic_paren": 70}
_SECTION_KINDS = frozenset({"part", "chapter", "section"})
_NUMBERED_RANK = 100  # numbered kinds rank after the sections, by their order of first appearance

_ORDINAL = re.compile(rf"^第{_SPACE}*(?P<num>{_NUM}){_SPACE}*(?P<unit>[编章节条])(?P<sep>{_SPACE}*)(?P<title>.*)$")
_CN = re.compile(rf"^(?P<num>{_CN_NUM})[、．](?P<sep>{_SPACE}*)(?P<title>.*)$")
_CN_PAREN = re.compile(rf"^[（(]{_SPACE}*(?P<num>{_CN_NUM}){_SPACE}*[）)](?P<sep>{_SPACE}*)(?P<title>.*)$")
_ARABIC = re.compile(rf"^(?P<num>\d{{1,2}}(?:[.．]\d{{1,2}}){{0,3}})(?P<dot>[.．、])?(?P<sep>{_SPACE}*)(?P<title>.*)$")
_ARABIC_PAREN = re.compile(rf"^[（(]{_SPACE}*(?P<num>\d{{1,2}}){_SPACE}*[）)](?P<sep>{_SPACE}*)(?P<title>.*)$")

_UNIT_KIND = {"编": "part", "章": "chapter", "节": "section", "条": "article"}
# A heading's title does not end like a sentence or a clause, nor introduce a list.
_SENTENCE_TAIL = tuple("。；;，,、：:！!？?…")
_MAX_TITLE = 40
_MAX_RUN_IN = 20  # 「（一）加强组织领导。各地区要……」: the first sentence is the heading when this short
_LIST_INTRO = tuple("：:")
# What follows 「第三条」 when a sentence refers to the article rather than starting it.
_REFERENCE_NEXT = frozenset("规所的之中和及或与至、，,。；;：:（(第款项")


def is_article(text: str) -> bool:
    """Whether a heading's text is an article's label (「第三条」), which opens no section of its own."""
    found = candidate(text)
    return found is not None and found.kind == "article" and not found.rest


def cn_number(text: str) -> int | None:
    """「十二」 → 12, 「二十」 → 20, 「一百零五」 → 105, 「12」 → 12; None when it is not a number."""
    if text.isdigit():
        return int(text)
    total, current = 0, 0
    for char in text:
        if char in _CN_DIGITS:
            current = _CN_DIGITS[char]
        elif char in _CN_UNITS:
            total += (current or 1) * _CN_UNITS[char]
            current = 0
        else:
            return None
    return total + current


@dataclass(frozen=True)
class Candidate:
    """A line that looks like a numbered heading: its kind, number, heading text and any run-in body."""

    kind: str  # "chapter", "cn", "arabic2" (1.1), ...
    rank: float
    number: tuple[int, ...]
    text: str
    rest: str = ""


def _title_ok(title: str) -> bool:
    return 0 < len(title) <= _MAX_TITLE and not title.endswith(_SENTENCE_TAIL)


def candidate(line: str) -> Candidate | None:
    """The numbered-heading reading of one line, judged alone (the sequence is checked by ``HeadingDetector``)."""
    line = " ".join(line.split())
    if not line or len(line) > 200:
        return None
    if match := _ORDINAL.match(line):
        number = cn_number(match["num"])
        if number is None or number == 0:
            return None
        kind = _UNIT_KIND[match["unit"]]
        label = line[: match.start("sep")]
        title = match["title"].strip()
        if not title:
            return Candidate(kind, _RANKS[kind], (number,), label)
        if _title_ok(title) and kind != "article":
            return Candidate(kind, _RANKS[kind], (number,), line)
        # 「第三条 本办法适用于……」: the article's number is the heading, its text the body. Without the space
        # (OCR drops it) only when the text cannot be a reference to the article (「第三条规定的……」).
        if kind == "article" and (match["sep"] or title[0] not in _REFERENCE_NEXT):
            return Candidate(kind, _RANKS[kind], (number,), label, title)
        return None
    for pattern, kind in ((_CN, "cn"), (_CN_PAREN, "cn_paren"), (_ARABIC_PAREN, "arabic_paren")):
        if match := pattern.match(line):
            number = cn_number(match["num"])
            if not number:
                return None
            return _titled(kind, _RANKS[kind], (number,), line, match)
    if match := _ARABIC.match(line):
        parts = tuple(int(p) for p in re.split(r"[.．]", match["num"]))
        title = match["title"]
        if not parts[0] or (len(parts) == 1 and not match["dot"]):
            return None  # 「3 个工作日内」 is a sentence, 「3.」 or 「3、」 a heading
        if title[:1].isdigit() or title[:1] in "%％年月日号时分秒倍元万亿个":
            return None  # 「1.5倍」「2.3万元」 (the regex stopped at a non-digit unit)
        if len(parts) > 1 and not match["dot"] and not match["sep"] and title[:1].isascii():
            return None  # 「1.2mm」
        return _titled(f"arabic{len(parts)}", _RANKS["arabic"] + len(parts) / 10, parts, line, match)
    return None


def _marker(line: str) -> tuple[str, tuple[int, ...]] | None:
    """The numbering kind and number of any line that starts with a list or heading marker (sentence or not)."""
    line = " ".join(line.split())
    for pattern, kind in ((_CN, "cn"), (_CN_PAREN, "cn_paren"), (_ARABIC_PAREN, "arabic_paren")):
        if (match := pattern.match(line)) and (number := cn_number(match["num"])):
            return kind, (number,)
    if (match := _ARABIC.match(line)) and (match["dot"] or "." in match["num"] or "．" in match["num"]):
        parts = tuple(int(p) for p in re.split(r"[.．]", match["num"]))
        if parts[0] and not match["title"][:1].isdigit():
            return f"arabic{len(parts)}", parts
    return None


def _titled(kind: str, rank: float, number: tuple[int, ...], line: str, match: re.Match) -> Candidate | None:
    title = match["title"].strip()
    if _title_ok(title):
        return Candidate(kind, rank, number, line)
    # Run-in heading: a short first sentence, then the body in the same paragraph.
    head, sep, rest = title.partition("。")
    if sep and rest.strip() and 0 < len(head) <= _MAX_RUN_IN and not re.search(r"[，,；;：:]", head):
        return Candidate(kind, rank, number, line[: match.start("title")] + head, rest.strip())
    return None


@dataclass
class HeadingDetector:
    """Feed lines in reading order; ``feed`` says whether each is a heading, and at which level."""

    stack: list[tuple[float, str]] = field(default_factory=list)  # (rank, kind) of the open headings, outer first
    last: dict[str, tuple[int, ...]] = field(default_factory=dict)  # last accepted number per kind
    order: list[str] = field(default_factory=list)  # numbered kinds in order of first appearance in the section
    list_kind: str | None = None
    list_next: tuple[int, ...] = ()

    def feed(self, line: str, previous: str = "") -> tuple[int, Candidate] | None:
        """``(level, candidate)`` when ``line`` is a heading here; ``previous`` is the line before it (or "")."""
        found = candidate(line)
        if found is None:
            numbered = _marker(line)
            if numbered is not None:  # 「1. 身份证复印件；」: a numbered sentence, so its siblings are list items
                self.list_kind, self.list_next = numbered[0], numbered[1][:-1] + (numbered[1][-1] + 1,)
            return None
        if self._is_list_item(found, previous):
            return None
        if not self._continues(found):
            return None
        self.last[found.kind] = found.number
        if found.kind == "article":  # inside the open headings, closing none
            return min(len(self.stack) + 1, 6), found
        if found.kind in _SECTION_KINDS:
            return self.level_for(found.kind, found.rank), found
        if found.kind not in self.order:
            self.order.append(found.kind)
        return self.level_for(found.kind, _NUMBERED_RANK + self.order.index(found.kind)), found

    def level_for(self, kind: str, rank: float) -> int:
        """The level of a heading of ``kind`` here: its place among the open headings of outer rank.

        A heading ranked before the numbered kinds (a section, a larger font) starts a new section, where the
        numbered kinds take their order afresh."""
        while self.stack and self.stack[-1][0] >= rank:
            self.stack.pop()
        self.stack.append((rank, kind))
        if rank < _NUMBERED_RANK:
            self.order = []
        return min(len(self.stack), 6)

    def _continues(self, found: Candidate) -> bool:
        number = found.number
        if found.kind.startswith("arabic") and len(number) > 1:
            parent = self.last.get(f"arabic{len(number) - 1}")
            if parent is None or parent != number[:-1]:
                return False
        if number[-1] == 1:
            return True
        previous = self.last.get(found.kind)
        return previous is not None and previous[:-1] == number[:-1] and previous[-1] + 1 == number[-1]

    def _is_list_item(self, found: Candidate, previous: str) -> bool:
        if previous.rstrip().endswith(_LIST_INTRO) and found.number[-1] == 1:
            self.list_kind, self.list_next = found.kind, found.number[:-1] + (2,)
            return True
        if self.list_kind == found.kind and found.number == self.list_next:
            self.list_next = found.number[:-1] + (found.number[-1] + 1,)
            return True
        self.list_kind = None
        return False


def title_line(blocks: list[Block]) -> str:
    """A numbered document's first paragraph when it reads as its title (one short line, not a sentence, before
    a numbered heading); "" when there is none."""
    if not blocks or not any(block.kind == "heading" for block in blocks[1:]):
        return ""
    first = blocks[0]
    if first.kind != "text" or "\n" in first.text or len(first.text) > _MAX_TITLE or first.text.endswith(_SENTENCE_TAIL):
        return ""
    return " ".join(first.text.split())


def with_numbered_headings(blocks: list[Block], *, detector: HeadingDetector | None = None) -> list[Block]:
    """Split text blocks at numbered heading lines, which become heading blocks with levels.

    Lines between headings stay together in one text block (with their page and meta); blocks of
    other kinds pass through. Use on documents without heading styles.
    """
    detector = detector or HeadingDetector()
    out: list[Block] = []
    previous = ""
    for block in blocks:
        if block.kind != "text":
            out.append(block)
            previous = ""
            continue
        body: list[str] = []

        def flush(body: list[str] = body, block: Block = block) -> None:  # bound: called within this block's loop only
            if body and "\n".join(body).strip():
                out.append(replace(block, text="\n".join(body).strip()))
            body.clear()

        for line in block.text.split("\n"):
            found = detector.feed(line.strip(), previous) if line.strip() else None
            if line.strip():
                previous = line.strip()
            if found is None:
                body.append(line)
                continue
            level, heading = found
            flush()
            out.append(Block(kind="heading", text=heading.text, level=level, page=block.page,
                             meta={k: v for k, v in block.meta.items() if k != "ocr_confidence"}))
            if heading.rest:
                body.append(heading.rest)
        flush()
    return out
