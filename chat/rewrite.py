"""Follow-up questions → standalone retrieval queries: the deterministic fallback used when no LLM is configured.

A question that refers back (它/那个/那/呢/换成…), is very short, or asks 「X怎么样」 about a short X is completed from
the previous standalone query, read as subject + attribute + predicate (「E5的电池」「保修」「多久」). In order: a
sibling swapped into it (``substitute``), a new attribute asked of its subject, or its subject put before the
follow-up's own words; a follow-up naming its own subject stands as asked. Keywords are whole jieba words the
retrieval analyzer keeps. The rules, with examples and figures: docs/chat.md "Follow-ups without an LLM".
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import jieba

from chat.rewrite_models import (
    ARTICLE_RE,
    BARE_NUMBER_RE,
    EN_PRONOUN_RE,
    MODEL_RE,
    models_in,
    pronoun_led,
    swap_model,
)
from knowledge.retrieval.analysis import get_analyzer


def _tagged(text: str) -> list:
    """jieba's part-of-speech cut. ``jieba.posseg`` loads its tables when imported (about 2 s), so it is imported
    here on first use, not when Django starts (every web worker, management command and test server would pay it);
    servers load it in the background at start (knowledge/warmup.py)."""
    import jieba.posseg

    words = jieba.posseg.lcut(text)
    if not MODEL_RE.search(text):
        return words
    # A model number is one word (jieba cuts 「XK-500」 into XK / - / 500, and the dash would end a subject).
    merged: list = []
    spans = [(m.start(), m.end()) for m in MODEL_RE.finditer(text)]
    pos = 0
    for w in words:
        start, end = pos, pos + len(w.word)
        pos = end
        span = next(((a, b) for a, b in spans if a <= start < b), None)
        if span is None:
            merged.append(w)
        elif start == span[0]:
            merged.append(jieba.posseg.pair(text[span[0]:span[1]], "eng"))
    return merged

# Words that point back to something said before (jieba cuts 应该 and 其他
# whole, so 该 and 其 only match when they stand alone).
REFERENCE_WORDS = frozenset(
    "它 它们 他 他们 她 她们 这 这个 这些 那 那个 那些 那么 其 该 上述 以上 前者 后者 此 此外 呢 还有 另外 同样 换成 改成".split()
)
# Words that end a question's subject: its verb, copula or question word.
PREDICATE_WORDS = frozenset(
    "有 没有 是 不是 是否 的 怎么 怎样 怎么样 如何 什么 哪些 哪个 哪里 多少 几 能 能否 能不能 可以 可不可以 支持 需要 要 "
    "吗 呢 为什么 为何 包括 包含 提供 适合 属于 收费 用 在 "
    "多久 多长时间 多长 多大 几年 几天 几个 几次 几点 几号 什么时候".split()
)
# Words that name what is asked about a thing rather than a thing: a follow-up naming one
# (「那价格呢？」) asks it of the same subject instead of swapping the subject out.
ATTRIBUTE_WORDS = frozenset(
    "价格 价钱 钱 费用 成本 预算 保修 质保 续航 里程 时速 速度 重量 尺寸 功率 容量 电压 参数 配置 规格 颜色 材质 "
    "寿命 噪音 功耗 功能 特点 区别 电话 地址 邮箱 位置 联系方式 营收 收入 利润 毛利 住宿 伙食 补助 标准 天数 时间 "
    "时长 期限 工资 待遇 流程 步骤 条件 材料".split()
)
_ATTRIBUTE_ENDINGS = ("价", "费", "期", "率", "量", *(w for w in ATTRIBUTE_WORDS if len(w) >= 2))
# jieba tags of common nouns (noun, other proper noun, verbal noun, noun morpheme, noun idiom).
NOUN_FLAGS = frozenset("n nz vn ng nl".split())
# At most this many characters of content (punctuation and particles aside) make a question "very short".
SHORT_CHARS = 4
# A 「X怎么样」 question is a possible follow-up when X has at most this many characters.
HOW_CHARS = 6
_PUNCT_RE = re.compile(r"[\s\W_]+", re.UNICODE)
_PUNCT_END_RE = re.compile(r"[\s\W_]+$", re.UNICODE)
# What opens a follow-up without being part of it: 「那」「那么」「还有」「换成」… (not 那个/那些/那里, which point at something).
_LEADING_RE = re.compile(r"^(?:那么|那(?![个些里边样])|还有|另外|此外|同样|请问|而|换成|改成|如果是|要是|"
                         r"(?i:what about|how about|and|what of)\s+)+")
_TRAILING_RE = re.compile(r"(?:呢|吗|啊|呀|吧|怎么样|怎样|如何)+$")
_ASKS_HOW_RE = re.compile(r"(?:怎么样|怎样|如何)(?:呢|啊|呀)?[\s\W_]*$")


@dataclass(frozen=True)
class Rewrite:
    """The standalone query and how it was made: ``none`` (first turn or unchanged), ``rules`` or ``llm``."""

    query: str
    method: str


def refers_back(question: str) -> bool:
    """True when the question has a reference word or is too short to search on its own."""
    if any(w in REFERENCE_WORDS for w in jieba.lcut(question)):
        return True
    return len(_PUNCT_RE.sub("", question)) <= SHORT_CHARS


def _asks_how(question: str) -> bool:
    """「E7怎么样？」: a short thing followed by 怎么样/怎样/如何."""
    return bool(_ASKS_HOW_RE.search(question)) and 0 < len(_PUNCT_RE.sub("", core_of(question))) <= HOW_CHARS


def needs_context(question: str) -> bool:
    """True when the question refers back, is too short to search on its own, or asks 「X怎么样」 about a short X."""
    return refers_back(question) or _asks_how(question)


def is_attribute(word: str) -> bool:
    """True for a word naming what is asked about a thing: 价格, 保修期, 联系电话, 功率…"""
    return word in ATTRIBUTE_WORDS or (len(word) >= 2 and word.endswith(_ATTRIBUTE_ENDINGS))


def _ends_subject(word: str) -> bool:
    return word in PREDICATE_WORDS or is_attribute(word) or bool(word.strip() and _PUNCT_RE.fullmatch(word))


def subject_of(question: str) -> str:
    """The words before the question's attribute or predicate, e.g. 「知库专业版」 in 「知库专业版有哪些功能？」 (or "")."""
    subject: list[str] = []
    for p in _tagged(question.strip()):
        if _ends_subject(p.word):
            break
        subject.append(p.word)
    analyzer = get_analyzer()
    # Leading politeness or reference words (请问, 那) are not part of the subject.
    while subject and not analyzer.tokenize(subject[0]):
        subject.pop(0)
    return "".join(subject).strip()


def rewrite_fallback(question: str, previous_queries: list[str]) -> Rewrite:
    """Deterministic rewrite of ``question`` given earlier standalone queries (oldest first).

    A question that stands on its own, or a first question, is returned as is.
    """
    question = question.strip()
    if not previous_queries:
        return Rewrite(question, "none")
    previous = _PUNCT_END_RE.sub("", previous_queries[-1].strip())
    core = core_of(question)
    bare_core = ARTICLE_RE.sub("", core).strip()  # 「what about the S20?」 names only S20
    if models_in(previous) and (BARE_NUMBER_RE.match(bare_core) or (models_in(bare_core) and bare_core in models_in(bare_core))):
        modelled = swap_model(previous, bare_core)  # 「那 XK-800 呢？」「800 呢？」「what about XK-800?」
        if modelled != previous:
            return Rewrite(modelled, "rules")
    if not needs_context(question) and not (models_in(previous) and EN_PRONOUN_RE.search(core)):
        return Rewrite(question, "none")
    if not _is_bare(core) or EN_PRONOUN_RE.search(core):
        led = pronoun_led(core, previous, subject_of(previous))
        if led:
            return Rewrite(led, "rules")
    own = content_words(core)
    plain_how = not refers_back(question)  # 「E7怎么样？」: only a clear sibling makes it a follow-up
    if not own:
        # Nothing searchable of its own (「为什么？」「还有呢？」): keep the question's words after the previous query.
        return Rewrite(f"{' '.join(content_words(previous))} {_PUNCT_RE.sub('', question)}".strip(), "rules")
    subject, bare = own_subject(core), _is_bare(core)
    if not subject or bare:
        if bare:
            swapped = _swap_bare(previous, core, own, common_nouns=not plain_how)
        else:
            swapped = substitute(previous, core)
            swapped = swapped and _with_rest(swapped, own)
        if swapped:
            return Rewrite(swapped, "rules")
        if plain_how:
            return Rewrite(question, "none")
        return _with_previous_subject(question, previous, own)
    swapped = substitute(subject_of(previous), subject)
    if swapped:
        return Rewrite(_with_rest(swapped, own), "rules")
    return Rewrite(question, "none")  # it names its own subject: nothing to carry


def _swap_bare(previous: str, core: str, own: list[str], *, common_nouns: bool) -> str | None:
    """A bare follow-up's query: its thing swapped for the previous one (rule 1), or its attribute asked of the
    previous subject (rule 2)."""
    thing, attribute = split_attribute(core)
    if not attribute:
        swapped = substitute(previous, core) or (common_nouns and thing and _swap_common_noun(previous, thing)) or None
        return _with_rest(swapped, own) if swapped else None
    subject = subject_of(previous)
    if subject and thing:
        subject = substitute(subject, thing) or (common_nouns and _swap_common_noun(subject, thing)) or ""
    return _with_rest(subject, content_words(attribute)) if subject else None


def split_attribute(core: str) -> tuple[str, str]:
    """A bare follow-up's thing and attribute: 「电机的价格」 → (电机, 价格), 「价格」 → ("", 价格), 「电机」 → (电机, "").

    A thing that only points back (「它的价格」「该版本的价格」) counts as none.
    """
    words = [p.word for p in _tagged(core)]
    cut = len(words)
    while cut and is_attribute(words[cut - 1]):
        cut -= 1
    attribute = "".join(words[cut:])
    head = words[:cut]
    while head and head[-1] == "的":
        head.pop()
    if any(w in REFERENCE_WORDS for w in head):
        head = []
    return "".join(head), attribute


def _with_previous_subject(question: str, previous: str, own: list[str]) -> Rewrite:
    """The previous subject (or, without one, all the previous keywords) followed by the question's own words."""
    subject = subject_of(previous)
    prefix_words = content_words(subject) if subject else content_words(previous)
    if not prefix_words or set(prefix_words) <= set(own):
        return Rewrite(question, "none")  # nothing to add, or the subject is already named
    prefix = subject or " ".join(prefix_words)
    return Rewrite(_with_rest(prefix, own), "rules")


def _with_rest(text: str, words: list[str]) -> str:
    """``text`` followed by those of ``words`` it does not already contain."""
    rest = [w for w in words if w not in text]
    return " ".join([text, *rest]).strip()


def core_of(question: str) -> str:
    """The question without its leading connective (那/那么/换成…), trailing particle (呢/吗/怎么样…), a trailing 的 and end punctuation."""
    core = _PUNCT_END_RE.sub("", question.strip())
    core = _LEADING_RE.sub("", core)
    core = _TRAILING_RE.sub("", core).strip()
    words = jieba.lcut(core)
    if len(words) > 1 and words[-1] == "的":  # 「成都的呢」 → 成都 (a word ending in 的, 目的, stays whole)
        core = "".join(words[:-1])
    return core


def content_words(text: str) -> list[str]:
    """The jieba words of ``text`` that retrieval searches on (whole words; reference words and stop words left out)."""
    analyzer = get_analyzer()
    return [w for w in jieba.lcut(text) if w.strip() and w not in REFERENCE_WORDS and analyzer.tokenize(w)]


def own_subject(core: str) -> str:
    """The follow-up's words before its predicate when they name something ("" when they only point back: 「其价格」「该版本」)."""
    head: list[str] = []
    for w in jieba.lcut(core):
        if w in PREDICATE_WORDS:
            break
        head.append(w)
    if any(w in REFERENCE_WORDS for w in head) or not content_words("".join(head)):
        return ""
    return "".join(head)


def _is_bare(core: str) -> bool:
    """True for a follow-up with no predicate of its own: 「杭州」「企业版」「它的价格」."""
    return not any(w in PREDICATE_WORDS and w != "的" for w in jieba.lcut(core))


# --- substitution ------------------------------------------------------------------

# Parts of speech whose words name a thing of one kind (jieba's tags: place, person, organisation, Latin script).
KINDS = {"ns": "place", "nr": "person", "nrt": "person", "nrfg": "person", "nt": "org", "eng": "latin"}
_NUMBERED_RE = re.compile(r"(第?[0-9一二三四五六七八九十百两]+)(年|月份|月|季度|日|号|期|楼|层|届|代)")


def substitute(previous: str, core: str) -> str | None:
    """``previous`` with its words of the same kind as the follow-up's replaced by them, or None when none is."""
    result = swap_model(previous, core)
    result = _swap_numbered(result, core)
    result = _swap_tagged(result, core)
    result = _swap_same_ending(result, core)
    return result if result != previous else None


def _swap_numbered(previous: str, core: str) -> str:
    """第三季度 for 第四季度, 2024年 for 2023年: a number with the same unit."""
    for m in _NUMBERED_RE.finditer(core):
        old = next((p for p in _NUMBERED_RE.finditer(previous) if p.group(2) == m.group(2) and p.group() != m.group()), None)
        if old is not None:
            previous = previous.replace(old.group(), m.group(), 1)
    return previous


def _swap_tagged(previous: str, core: str) -> str:
    """杭州 for 北京, 李娜 for 张伟, macOS for Windows: a word with the same kind of part-of-speech tag."""
    tagged = [(p.word, KINDS.get(p.flag)) for p in _tagged(previous) if not is_attribute(p.word)]
    for word in _tagged(core):
        kind = KINDS.get(word.flag)
        if kind is None or len(word.word) < 2 or word.word in previous:
            continue
        old = next((w for w, k in tagged if k == kind and len(w) >= 2 and w not in core), None)
        if old is not None:
            previous = previous.replace(old, word.word, 1)
    return previous


def _swap_same_ending(previous: str, core: str) -> str:
    """企业版 for 专业版, 病假 for 年假: a span of the previous question, on word boundaries, of the same length and last character."""
    if len(core) < 2 or core in previous or not _is_bare(core):
        return previous
    bounds = [0]
    for p in _tagged(previous):
        bounds.append(bounds[-1] + len(p.word))
    for start in bounds:
        end = start + len(core)
        span = previous[start:end]
        if end in bounds and span[-1] == core[-1] and span != core and not _PUNCT_RE.search(span):
            return previous[:start] + core + previous[end:]
    return previous


def _is_common_noun(word: str, flag: str) -> bool:
    return flag in NOUN_FLAGS and not is_attribute(word) and word not in PREDICATE_WORDS and word not in REFERENCE_WORDS


def _swap_common_noun(previous: str, thing: str) -> str | None:
    """电机 for 电池 in 「电池保修多久」: the common nouns just before the previous attribute or predicate, replaced by ``thing``.

    ``thing`` must be a common noun phrase too (no place, person, Latin-script
    name or number; its last word a noun, not an attribute), and the previous
    nouns must sit right before what was asked (a 的 between them is allowed,
    「空调的保修期」), so 「张伟负责哪个项目」 has nothing to swap.
    """
    mine = _tagged(thing)
    if not mine or thing in previous or any(KINDS.get(p.flag) or _NUMBERED_RE.search(p.word) for p in mine):
        return None
    if not all(_is_common_noun(p.word, p.flag) or p.flag == "f" for p in mine) or not _is_common_noun(mine[-1].word, mine[-1].flag):
        return None
    words = _tagged(previous)
    stop = next((i for i, p in enumerate(words) if _ends_subject(p.word) and p.word != "的"), len(words))
    end = stop
    while end and words[end - 1].word == "的":
        end -= 1
    start = end
    # The run of common nouns (a localiser such as 上 inside it: 线/上/广告) that ends the previous subject.
    while start and (_is_common_noun(words[start - 1].word, words[start - 1].flag)
                     or (words[start - 1].flag == "f" and start - 1 > 0 and start < end)):
        start -= 1
    while start < end and words[start].flag == "f":
        start += 1
    if start == end:
        return None
    offset = sum(len(p.word) for p in words[:start])
    length = sum(len(p.word) for p in words[start:end])
    return previous[:offset] + thing + previous[offset + length:]


def rewrite_clean(text: str, *, question: str) -> str | None:
    """Tidy an LLM's rewrite (quotes, a 「改写后的问题：」 prefix, extra lines); None when it is unusable."""
    text = (text or "").strip().splitlines()[0].strip() if (text or "").strip() else ""
    text = re.sub(r"^(改写后的问题|改写|问题|query)\s*[:：]\s*", "", text, flags=re.IGNORECASE)
    text = text.strip(" \"'“”‘’「」『』")
    if not text or len(text) > max(200, 4 * len(question)):
        return None
    return text
