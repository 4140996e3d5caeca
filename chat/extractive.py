"""Extractive answers (no LLM): the sentences, table rows and code blocks of the sources that hold the answer,
each group cited ``[n]``.

Measured with ``manage.py chat_eval`` (docs/chat.md "How extractive answers are chosen"). A unit is scored by the
share of the question's *weight* it holds (each token weighted by its reference idf, ``evidence.token_weight``,
so 「哪一年」 and 「的」 count for nothing and 「光绪」 for much), plus a bonus when it holds what the question
asks for (默认值 → a setting's value, 多少钱 → a price, 多久/几年 → a duration, 几点 → a time, 何时/哪年 → a date,
多少/几 → a number, 哪里 → a place, 谁 → a name), discounted by its source's rank; within a source, the words of
its subject (held by most of its sentences, or in its title or section path) count less, since the answering
sentence often refers to the subject as 「它」. The best sentence leads; the sentence after it follows when the best
one does not hold what is asked for, or is short, and the one before it when the best one opens by referring back
(「因此他……」「这次……」); a list question (有哪些/步骤/哪几) gets the list that follows. A table row is scored with
its table's header row and quoted with it, one header and then only the rows asked about; a row that names what
is asked about and holds the kind asked for scores more than a sentence sharing its words (「| 充电时间 | 6至8小时 |」
over 「不要长时间连续充电超过12小时。」). Code (commands, settings, statements) is one unit up to 160 characters,
quoted whole. Headings (shown as the section path) are never quoted, unless the short line states a value (a
date, a price, a duration); a FAQ chunk is quoted from its answer, without 「问：…答：…」, whole when it is short
(up to twice the length limit). With rows, code and these kinds, ``chat_eval`` answer_contains on
devdata/manual-zh went 0.467 → 0.567 and on devdata/policy-zh 0.600 → 0.617 (the sets they were chosen on);
devdata/faq-zh, docs-zh/faq and CMRC and DRCD questions 301–1000 unchanged (docs/chat.md).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from chat.prompts import Source
from knowledge.retrieval.analysis import get_analyzer
from knowledge.retrieval.evidence import token_weight
from knowledge.retrieval.text import ANNOUNCING

MAX_EXTRACT_CHARS = 160
"""The answer's length at most, in whole sentences (the best sentence and a list are kept whole whatever their
length). Chosen on the first 300 CMRC questions (answers given, replayed offline on retrieval's results): 140 →
0.879 of answers hold the span, 150 → 0.897, 160 → 0.924 with a median answer of 146 characters (the issue's
ceiling is 150). Later changes moved 160 to 0.938 in ``chat_eval`` (docs/chat.md)."""
LIST_ITEMS = 12
CODE_MAX_CHARS = 160
"""A code block up to this long is one unit, quoted whole; a longer one is cut into parts of whole lines this long
at most, each a unit (the part holding the question's words is quoted)."""
RANK_DISCOUNT = 0.15
"""A sentence of the n-th source (0-based) scores × 1 / (1 + 0.15·n): sources are in relevance order."""
TYPE_BONUS = 0.3
"""A sentence's coverage × (1 + 0.3) when it holds the kind of thing the question asks for."""
ROW_BONUS = 0.5
"""A table row whose own cells hold a word of the question and the kind of thing asked for scores × (1 + 0.5) more:
it names what is asked about and gives its value (「| 充电时间 | 6至8小时 |」), where a sentence holding the same words
and a value of that kind may state something else (「不要连续充电超过12小时」)."""
SUBJECT_DISCOUNT = 0.7
"""Among one source's sentences, a word's weight × (1 − 0.7 · the share of sentences holding it); a word of the
source's title or section path counts as held by all of them. Its topic is what the question names and what the
first sentence spells out in full, while the sentence that answers often says 「牠们」 or 「该站」: with the title's
words discounted too, ``chat_eval`` answer_contains on CMRC went 0.837 → 0.887 (questions 301–600), 0.890 → 0.925
(601–1000, not looked at), 0.907 → 0.913 (1–300); a discount of 0.7 instead of 1 for the title's words: 0.863
(301–600); the documentation sets unchanged."""
OTHER_SOURCE_SHARE = 0.9
"""Another source's sentence comes in only when it scores ≥ 0.9 × the best (the answer split across sources)."""
FILL_SHARE = 1.0
KEEP_SHARE = 0.15
"""After the best sentence and its neighbour, the next best sentences scoring ≥ 0.15 × the best are added while
the answer stays within its length limit, and shown in the source's order."""

_SENTENCE_RE = re.compile(r"[^。！？!?；;\n]+[。！？!?；;]*[”」』）)]?")
_HEADING_MD_RE = re.compile(r"^\s*#{1,6}\s")
_ITEM_RE = re.compile(r"^\s*(?:[-*+•·]\s+|\d{1,2}[.)、．]\s*|[（(]\d{1,2}[)）]\s*|[一二三四五六七八九十]{1,2}[、.．]\s*|第[一二三四五六七八九十\d]{1,3}步[:：，,]?\s*)")
_QUOTE_RE = re.compile(r"^\s*>\s*")
_FAQ_RE = re.compile(r"^\s*(?:问|Q)\s*[:：].*?\n\s*(?:答|A)\s*[:：]\s*", re.DOTALL)
_END = "。！？!?；;：:”」』）)…"
_TABLE_ROW_RE = re.compile(r"^\s*\|[^\n]*\|")
_CJK_RE = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_QUOTED_RE = re.compile(r"\"[^\"]*\"|'[^']*'")
_CODE_COMMENT_RE = re.compile(r"^(?:#(?!#?\s*$)|//|/\*|\*/|--\s)")
# A line of code, a command or a setting, read from its shape (a parser drops a Markdown fence, so the chunk's text
# seldom has one): a shell prompt or command, key=value, a call, a statement ending ; { } or a YAML/JSON key.
_CODE_LINE_RE = re.compile(
    r"^\$\s|^(?:sh|bash|java|javac|docker|docker-compose|kubectl|helm|mvn|gradle|git|cd|export|curl|wget|pip3?|npm|"
    r"python3?|nohup|tar|unzip|vim?|cat|ls|mkdir|rm|cp|mv|sudo|systemctl|service|chmod|ulimit|sysctl|echo|source)\s|"
    r"^\./|^bin/|[;{}]$|^[\w.\-\[\]]+\s*=\s*\S|\w=\w|\w\([^()]*\)|^[\w.\-\"']+:\s*(?:\S+|\{|\[)?$|^<\w|^-{1,2}[a-zA-Z]|=>|->|::")

_NUMBER_RE = re.compile(r"\d|[零一二两三四五六七八九十百千万亿]+(?:个|台|套|节点|周|分钟|秒钟|行|页|年|月|日|天|人|名|次|位|种|座|条|米|里|公里|千米|平方|元|岁|倍|成|分|秒|小时|世纪|届|代|层|部|本|首|场|项|家|所|只|头|吨|克|件|支|队|省|县|国)|百分之")
_DATE_RE = re.compile(r"\d{1,4}\s*年|[零〇一二三四五六七八九十]{2,4}年|\d{1,2}\s*月|\d{1,2}\s*[日号]|[一二三四五六七八九十]{1,3}月|世纪|年代|年间|时期|朝|元年|初|末|期间|春|夏|秋|冬|周[一二三四五六日天]|星期[一二三四五六日天]|\d{1,2}:\d{2}")
_PLACE_RE = re.compile(r"[省市县区州国岛山河江湖海洋洲城镇村路街港湾峡谷原岸]|位于|在.{1,12}(?:的|附近|一带|境内)")
_PERSON_RE = re.compile(r"[\u4e00-\u9fff]{2,4}(?:先生|女士|教授|博士|皇帝|国王|总统|主席|将军)|由[\u4e00-\u9fff]{2,4}(?:所|于|在|创|建|发|设|提|编|撰|执)|[·•][\u4e00-\u9fff]")

# What the question asks for, by its words (checked in this order). The first five are what people ask of manuals,
# price lists and policies: a setting's value, a price, a duration, a time of day; then the kinds CMRC/DRCD questions
# ask for (a date, a number, a place, a person).
_ASKS = (
    ("value", re.compile(r"默认值|默认是|默认为|缺省值|默认(?:的)?(?:端口|目录|路径|大小|地址|配置|设置|参数)|填什么|填多少|填写什么|"
                         r"设(?:为|成|置为|置成)?(?:多大|多少|什么|几)|取值|配置(?:成|为)?什么|值是多少|值为多少|建议值|是什么值")),
    ("price", re.compile(r"多少钱|价格|售价|价钱|报价|费用|收费|多少元|几块钱|贵不贵|花多少")),
    ("duration", re.compile(r"多久|多长时间|多长的时间|多少时间|几年|几个月|几天|几周|几个?小时|几分钟|几秒|多少年|多少天|多少个?月|"
                            r"多少个?小时|多少分钟|多少秒|时长|期限|保修期|有效期")),
    ("time", re.compile(r"几点|什么时间点|几时")),
    ("date", re.compile(r"何时|什么时候|什么时间|哪一?年|何年|几几年|哪个?年代|哪一?天|几月|几号|哪个?月|何日|年份|日期|哪个?世纪|哪个?朝代|哪个时期")),
    ("number", re.compile(r"多少|几[个次位名种岁年天条座人倍件只家所项届部本首场万千百十]|多[大长高重远久深宽厚快]|第几|百分之几|几成|多少钱|人口|面积|数量")),
    ("place", re.compile(r"哪里|哪儿|何处|何地|在哪|什么地方|哪个?(?:国家|城市|省|地区|地方|州|县|岛|大洲|洲)|哪国|位于")),
    ("person", re.compile(r"谁|哪位|何人|什么人|哪个人|名字|叫什么")),
)
_DURATION_RE = re.compile(r"(?<!\d)\d{1,3}(?:\.\d+)?\s*(?:年|个月|周|星期|天|个?小时|分钟|秒|毫秒|个?工作日|日(?:内|以内|之内))|"
                          r"\d+(?:\.\d+)?\s*(?:ms|min|h|s)(?![a-z])|"
                          r"[零一二两三四五六七八九十百半]+(?:年|个月|个星期|周|天|个?小时|分钟|秒)|终身|永久")
_PRICE_RE = re.compile(r"\d[\d,.]*\s*(?:元|块|万元|美元|港币|欧元)|[¥￥$]\s*\d")
_TIME_RE = re.compile(r"\d{1,2}\s*(?:点|时)|\d{1,2}:\d{2}|凌晨|上午|下午|晚上|中午|早上")
_SETTING_RE = re.compile(r"\d|\b(?:true|false|null|none|on|off|yes|no|enabled?|disabled?)\b|[A-Z][A-Z0-9]*_[A-Z0-9_]+|"
                         r"\w=\S|/[\w.{}~-]+/|「[^」]+」|“[^”]+”|`[^`]+`", re.IGNORECASE)
# A line that states a value (a date, a price, a duration, a size) is never taken for a heading, however short and
# unpunctuated: 「2024年10月1日起在全国门店上市」「通常是256KB」 are what a question asks for.
_VALUE_LINE_RE = re.compile(r"\d{4}\s*年|\d{1,2}\s*月\s*\d{1,2}\s*[日号]|\d\s*(?:KB|MB|GB|TB|KiB|MiB|GiB|%|元)|"
                            r"(?<!\d)\d{1,3}(?:\.\d+)?\s*(?:年|个月|周|天|小时|分钟|秒|毫秒)")

# A sentence opening with a back-reference (「因此他提出……」「这次为……」「两校……」) brings the sentence before it, which
# says what it refers to. chat_eval answer_contains: DRCD 301–600 0.627 → 0.637 (chosen there), DRCD 601–1000 (not
# looked at) 0.7125 → 0.715; CMRC 301–600 and 1001–1266 and the documentation sets unchanged.
_BACK_REFERENCE_RE = re.compile(
    r"^(?:[这這此该該其彼]|[他她它牠祂][们們]?|两[者校国人队]|兩[者校國人隊]|双方|雙方|因此|因而|所以|于是|於是|"
    r"同年|次年|翌年|当年|當年|后来|後來|之后|之後|随后|隨後|然而|但是|不过|不過)")
_LIST_RE = re.compile(r"有哪些|哪几|哪些|步骤|流程|几个步骤|包括什么|包含什么|分为|几种|几类|列出")


@dataclass
class Unit:
    """A sentence (or a list item) of a source, where it stands and what it is."""

    n: int
    pos: int
    text: str
    item: bool = False
    line: int = 0
    row: bool = False
    """A table row (``| a | b |``), shown on a line of its own."""
    header: str = ""
    """A row's table header row (its first row), scored and quoted with it; "" when the table has none."""
    table: int = -1
    """Which table of the source a row is in."""
    code: bool = False
    """A code block, or a part of one within ``CODE_MAX_CHARS``: quoted whole, on lines of its own."""


def question_asks(question: str) -> str | None:
    """What kind of thing the question asks for: value, price, duration, time, date, number, place, person, or None."""
    for kind, pattern in _ASKS:
        if pattern.search(question):
            return kind
    return None


def is_list_question(question: str) -> bool:
    return bool(_LIST_RE.search(question))


def holds(kind: str | None, text: str) -> bool:
    """Whether ``text`` holds the kind of thing asked for."""
    if kind == "value":
        return bool(_SETTING_RE.search(text))
    if kind == "price":
        return bool(_PRICE_RE.search(text))
    if kind == "duration":
        return bool(_DURATION_RE.search(text))
    if kind == "time":
        return bool(_TIME_RE.search(text))
    if kind == "date":
        return bool(_DATE_RE.search(text))
    if kind == "number":
        return bool(_NUMBER_RE.search(text))
    if kind == "place":
        return bool(_PLACE_RE.search(text))
    if kind == "person":
        return bool(_PERSON_RE.search(text))
    return False


def source_text(source: Source) -> str:
    """What may be quoted from a source: a FAQ chunk's answer, not its 问/答 pair; a heading chunk: nothing."""
    c = source.candidate
    if c.chunk_type == "heading":
        return ""
    if c.chunk_type == "faq":
        answer = str((c.metadata or {}).get("answer") or "").strip()
        return answer or _FAQ_RE.sub("", source.text, count=1)
    return source.text


def _is_heading_line(line: str, next_line: str | None, headings: set[str]) -> bool:
    """A line that names a section rather than says something: a path element, or short, unpunctuated, followed by text."""
    bare = line.strip().strip("#").strip()
    if not bare:
        return True
    if bare in headings:
        return True
    return (next_line is not None and len(bare) <= 24 and bare[-1] not in _END and not _ITEM_RE.match(line)
            and not re.search(r"[，,、]", bare) and not _VALUE_LINE_RE.search(bare))


def _line_kind(line: str) -> str:
    """"code" (a command, a setting, a statement), "comment" (# or // …), or "text"."""
    bare = line.strip()
    if _CODE_COMMENT_RE.match(bare):
        return "comment"
    if _CJK_RE.search(_QUOTED_RE.sub("", bare)):
        return "text"
    return "code" if _CODE_LINE_RE.search(bare) else "text"


def _code_blocks(lines: list[str]) -> dict[int, int]:
    """``{first line: line after the block}`` for each run of code lines (with the comment lines among or before
    them); ``` fences mark a block too."""
    kinds = [_line_kind(ln) for ln in lines]
    fenced = False
    for i, ln in enumerate(lines):
        if ln.strip().startswith("```"):
            kinds[i] = "fence"
            fenced = not fenced
        elif fenced:
            kinds[i] = "code"
    blocks: dict[int, int] = {}
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and kinds[j] in ("code", "comment", "fence"):
            j += 1
        if any(k == "code" for k in kinds[i:j]):
            while j > i and kinds[j - 1] == "comment":  # a trailing comment belongs to the text after it
                j -= 1
            blocks[i] = j
            i = j
        else:
            i = max(j, i + 1)
    return blocks


def units(source: Source) -> list[Unit]:
    """The source's sentences, list items, table rows and code blocks in order, headings left out."""
    c = source.candidate
    headings = {h.strip() for h in [c.title, *c.section_path] if h}
    lines = [ln for ln in source_text(source).splitlines() if ln.strip()]
    blocks = _code_blocks(lines)
    out: list[Unit] = []
    header, table = "", -1
    i = 0
    while i < len(lines):
        raw = lines[i]
        if i in blocks:
            code = [ln.rstrip() for ln in lines[i:blocks[i]] if not ln.strip().startswith("```")]
            for part in _code_parts(code):
                out.append(Unit(n=source.n, pos=len(out), text=part, line=i, code=True))
            i = blocks[i]
            continue
        if raw.lstrip().startswith("|"):  # a table row (a short one is not a heading)
            if len(re.sub(r"\W", "", raw)) < 2:  # the |---| rule
                i += 1
                continue
            previous = lines[i - 1].lstrip() if i else ""
            if not previous.startswith("|"):  # the table's first row: its header, when more rows follow
                table += 1
                header = ""
                if i + 1 < len(lines) and lines[i + 1].lstrip().startswith("|") and _TABLE_ROW_RE.match(raw):
                    header = raw.strip()
                    i += 1
                    continue
            out.append(Unit(n=source.n, pos=len(out), text=raw.strip(), line=i, row=True, header=header, table=table))
            i += 1
            continue
        if _HEADING_MD_RE.match(raw) or _is_heading_line(raw, lines[i + 1] if i + 1 < len(lines) else None, headings):
            i += 1
            continue
        line = _QUOTE_RE.sub("", raw)
        item = bool(_ITEM_RE.match(line))
        line = _ITEM_RE.sub("", line).strip() if item else line.strip()
        for k, m in enumerate(_SENTENCE_RE.finditer(line)):
            text = m.group().strip()
            if len(re.sub(r"\W", "", text)) >= 2:
                out.append(Unit(n=source.n, pos=len(out), text=text, item=item and k == 0, line=i))
        i += 1
    return out


def _code_parts(lines: list[str]) -> list[str]:
    """A code block as one unit, or, past ``CODE_MAX_CHARS``, as consecutive parts of whole lines within it."""
    parts: list[list[str]] = [[]]
    for ln in lines:
        if parts[-1] and len("\n".join(parts[-1] + [ln])) > CODE_MAX_CHARS:
            parts.append([])
        parts[-1].append(ln)
    return ["\n".join(p) for p in parts if p]


def _names_asked(weights: dict[str, float], row: Unit) -> bool:
    """Whether a row is asked about: its cells hold a word of the question that its header does not (「车架」 in
    「| 车架 | 3年 |」 for 「车架保修几年」; 「保修」 in 「进水损坏不保修」 is what the header 「保修期」 says of every row)."""
    analyzer = get_analyzer()
    cells, header = analyzer.normalize(row.text), analyzer.normalize(row.header)
    return any((re.search(rf"(?<![0-9.]){t}(?![0-9.a-z])", cells) if t.isdigit() else t in cells) and t not in header
               for t in weights)  # a number as a whole: 「3」 names the row 「| 3 | 10s |」, not 「| 13 | 9min |」


def _scored_text(u: Unit) -> str:
    """What a unit is scored on: a row with its table's header (the header says what its cells are)."""
    return f"{u.header}\n{u.text}" if u.header else u.text


def _weights(query: str) -> dict[str, float]:
    analyzer = get_analyzer()
    weights: dict[str, float] = {}
    for token in analyzer.tokenize(query):
        w = token_weight(token)
        if w > 0:
            weights[token] = max(weights.get(token, 0.0), w)
    return weights


def _coverage(weights: dict[str, float], total: float, text: str) -> float:
    if not total:
        return 0.0
    norm = get_analyzer().normalize(text)
    return sum(w for t, w in weights.items() if t in norm) / total


def _discriminating(weights: dict[str, float], sentences: list[str], topic: str = "") -> dict[str, float]:
    """Weights for choosing among one source's sentences: a word most of them hold (the subject) says little,
    and so does a word of the source's title or section path (its topic, often a pronoun in the answer)."""
    if len(sentences) < 2:
        return weights
    analyzer = get_analyzer()
    norm = [analyzer.normalize(t) for t in sentences]
    topic = analyzer.normalize(topic)
    out = {}
    for t, w in weights.items():
        share = sum(1 for x in norm if t in x) / len(norm)
        if topic and t in topic:
            share = 1.0  # the topic: as if every sentence held it
        out[t] = w * (1.0 - SUBJECT_DISCOUNT * share)
    return out


def extractive_answer(query: str, sources: Sequence[Source], *, max_chars: int = MAX_EXTRACT_CHARS) -> str:
    """The answer built from ``sources`` for ``query``; "" when there are no sources."""
    by_source = {s.n: units(s) for s in sources}
    weights = _weights(query)
    total = sum(weights.values())
    asks = question_asks(query)
    listing = is_list_question(query)
    # Two scores per sentence: ``raw`` chooses the source (and another source's sentence), ``own`` the sentences
    # within it, with the words most of that source's sentences hold (its subject) discounted. Discounted scores
    # are not comparable across sources: a chunk about 产假 says 产假 in every sentence.
    raw: list[tuple[float, int, int]] = []
    own_scores: dict[tuple[int, int], float] = {}
    asked: set[tuple[int, int]] = set()  # the rows asked about
    matching: set[tuple[int, int]] = set()  # the units holding a word of the question
    for rank, source in enumerate(sources):
        texts = [_scored_text(u) for u in by_source[source.n]]
        c = source.candidate
        topic = " ".join(x for x in [c.title, *c.section_path] if x)
        own = _discriminating(weights, texts, topic)
        for u, text in zip(by_source[source.n], texts):
            kind = 1.0 + (TYPE_BONUS if asks and holds(asks, text) else 0.0)
            if _coverage(weights, total, u.text) > 0:
                matching.add((source.n, u.pos))
            if u.row and _names_asked(weights, u):
                asked.add((source.n, u.pos))
                if asks and holds(asks, u.text):
                    kind *= 1.0 + ROW_BONUS  # the row names what is asked about and gives its value
            discount = 1 + RANK_DISCOUNT * rank
            # Read with its title and section path: a chunk of the document the question names holds its name
            # even when the chunk itself says 「牠们」.
            plain = _coverage(weights, total, f"{topic}\n{text}" if topic else text) * kind
            if plain > 0:
                raw.append((plain / discount - 0.0001 * u.pos, source.n, u.pos))
            own_scores[(source.n, u.pos)] = _coverage(own, total, text) * kind - 0.0001 * u.pos
    if raw:
        raw.sort(key=lambda item: -item[0])
        n = raw[0][1]
        ranked = sorted(((own_scores[(n, u.pos)], u.pos) for u in by_source[n]), reverse=True)
        pos = ranked[0][1]
    else:
        first = next((s for s in sources if by_source[s.n]), None)
        if first is None:
            return ""
        n, pos, ranked = first.n, 0, []
    top = next(s for s in sources if s.n == n)
    if top.candidate.chunk_type == "faq" and sum(len(u.text) for u in by_source[n]) <= 2 * max_chars:
        # A FAQ answer is written to be read whole: quoting one of its sentences loses the rest of the answer.
        chosen = list(by_source[n])
    else:
        chosen = _around(by_source[n], pos, asks=asks, listing=listing, max_chars=max_chars, asked=asked,
                         matching=matching)
    picked = {(n, u.pos) for u in chosen}
    used = sum(len(u.text) for u in chosen)
    # Then the source's next best sentences while the answer is short (a row only when it is asked about).
    best_own = ranked[0][0] if ranked else 0.0
    for score, upos in ranked[1:]:
        if used >= max_chars * FILL_SHARE or score < KEEP_SHARE * best_own:
            break
        extra_unit = by_source[n][upos]
        if (n, upos) in picked or used + len(extra_unit.text) > max_chars or (extra_unit.row and (n, upos) not in asked):
            continue
        picked.add((n, upos))
        used += len(extra_unit.text)
    # A chosen sentence that announces a table or list (「标准如下：」) brings it, whatever the length.
    for upos in sorted(p for sn, p in picked if sn == n):
        picked |= {(n, u.pos) for u in _announced(by_source[n], upos, max_chars=max_chars, asked=asked,
                                                  matching=matching)}
    # And another source's best sentence when it scores close to the chosen source's (an answer split across sources).
    best_raw = raw[0][0] if raw else 0.0
    other = next(((o, opos) for score, o, opos in raw[1:] if o != n and score >= OTHER_SOURCE_SHARE * best_raw
                  and (not by_source[o][opos].row or (o, opos) in asked)), None)
    if other is not None and used + len(by_source[other[0]][other[1]].text) <= max_chars:
        picked.add(other)
    order = {s.n: i for i, s in enumerate(sources)}
    groups: list[tuple[int, list[Unit]]] = []
    for source_n, upos in sorted(picked, key=lambda p: (p[0] != n, order[p[0]], p[1])):
        u = by_source[source_n][upos]
        if groups and groups[-1][0] == source_n:
            groups[-1][1].append(u)
        else:
            groups.append((source_n, [u]))
    parts = []
    for source_n, group in groups:
        text = ""
        previous: Unit | None = None
        for u in group:
            if previous is not None and previous.pos != u.pos - 1:
                # Text skipped in between: 「…」, on a line of its own before a part of a code block; rows left out
                # of a table and items left out of a list need no mark.
                if u.code:
                    text += "\n…"
                elif not (u.row or u.item):
                    text += "…"
                    previous = None
            text += _render(u, previous)
            previous = u
        parts.append(text.strip("\n") + f"[{source_n}]")
    return "\n\n".join(parts)


def _render(unit: Unit, previous: Unit | None) -> str:
    text = unit.text
    if unit.row:
        if unit.header and not (previous is not None and previous.row and previous.table == unit.table):
            text = f"{unit.header}\n{text}"  # the table's header, once, before its first row quoted
        return ("\n" if previous is not None else "") + text
    if unit.code or unit.item:
        text = "- " + text if unit.item else text
        return ("\n" if previous is not None else "") + text
    if previous is not None and (previous.item or previous.row or previous.code
                                 or previous.line != unit.line and previous.text[-1] not in _END):
        return "\n" + text  # a new line in the source that does not follow a sentence's end: never glued
    return text


def _announced(units_: list[Unit], pos: int, *, max_chars: int, asked: set[tuple[int, int]] = frozenset(),
               matching: set[tuple[int, int]] = frozenset()) -> list[Unit]:
    """The table rows, list items or code a sentence ending 「如下：」 announces (they are the answer), else [].

    Of a table, the rows asked about when there are any (the question names a row), else every row."""
    if not units_[pos].text.endswith(ANNOUNCING):
        return []
    out: list[Unit] = []
    used = 0
    for u in units_[pos + 1: pos + 1 + LIST_ITEMS]:
        if not (u.item or u.row or u.code) or used > max_chars * 2:
            break
        if u.code:  # a code block: the part holding the question's words, when no rows or items came first
            return out or _announced_code(units_, u.pos - 1, matching)
        out.append(u)
        used += len(u.text)
    if any((u.n, u.pos) in asked for u in out if u.row):
        out = [u for u in out if not u.row or (u.n, u.pos) in asked]
    return out


def _announced_code(units_: list[Unit], pos: int, matching: set[tuple[int, int]]) -> list[Unit]:
    """The part of a long code block announced at ``pos`` that holds the question's words (its first part when
    none does): the configuration that 「这里贴出……配置文件内容：」 announces is longer than a part."""
    parts = []
    for u in units_[pos + 1:]:
        if not u.code or (parts and u.line != parts[0].line):
            break
        parts.append(u)
    return [next((u for u in parts if (u.n, u.pos) in matching), parts[0])] if parts else []


def _around(units_: list[Unit], pos: int, *, asks: str | None, listing: bool, max_chars: int,
            asked: set[tuple[int, int]] = frozenset(), matching: set[tuple[int, int]] = frozenset()) -> list[Unit]:
    """The best sentence and what should come with it: the list it opens, or the sentence after it.

    A row is quoted alone (with its header, when rendered): the rows next to it are other things."""
    best = units_[pos]
    chosen = [best]
    if best.row:
        return chosen
    used = len(best.text)
    rest = units_[pos + 1:]
    announced = _announced(units_, pos, max_chars=max_chars, asked=asked, matching=matching)
    if announced:
        return chosen + announced
    if listing:
        items = [u for u in rest[:LIST_ITEMS] if u.item]
        if items and rest and rest[0].item:
            for u in rest[:LIST_ITEMS]:
                if not u.item:
                    break
                chosen.append(u)
                used += len(u.text)
                if used > max_chars * 2:
                    break
            return chosen
    if rest and not (rest[0].row and (rest[0].n, rest[0].pos) not in asked):
        after = rest[0]
        wants_more = (asks is not None and not holds(asks, best.text) and holds(asks, after.text)) or used < 40
        if wants_more or used + len(after.text) <= max_chars * 0.6:
            chosen.append(after)
            used += len(after.text)
    if pos > 0 and _BACK_REFERENCE_RE.match(best.text) and not best.item:
        # 「因此他提出……」「这次为……」: what the sentence refers to is in the one before it.
        chosen.insert(0, units_[pos - 1])
    return chosen
