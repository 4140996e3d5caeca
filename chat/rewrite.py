"""Follow-up questions → standalone retrieval queries: the deterministic fallback used when no LLM is configured.

A follow-up such as 「那它的价格呢？」 names nothing a search could find. When
a question refers back (a pronoun or ellipsis marker: 它/他/她/这个/那个/那/其/
该/上述/呢…) or is very short, it is completed from the previous standalone
query, in this order:

1. **Substitution.** A follow-up that names something of the same kind as a
   word of the previous question asks the same question about it: 「那杭州呢？」
   after 「出差去北京住宿能报多少？」 becomes 「出差去杭州住宿能报多少」. Same kind
   means the same jieba part of speech among place, person, organisation and
   Latin-script names (杭州/北京, 李娜/张伟, macOS/Windows), a number with the
   same unit (第三季度/第四季度, 2024年/2023年), or a word of the same length
   ending in the same character (企业版/专业版, 病假/年假, 人事部/财务部).
   A bare follow-up (「那杭州呢？」) swaps into the whole previous question; one
   with its own predicate (「那企业版支持单点登录吗？」) only into its subject.
2. **The previous subject.** A follow-up without a subject of its own
   (「它支持单点登录吗？」「那价格呢？」) gets the previous subject in front of its
   own words: after 「知库专业版有哪些功能？」 it becomes 「知库专业版 价格」. The
   subject is the previous question's words before its predicate (the first of
   有/是/的/怎么/如何/哪些/支持…), so the old attribute (功能) doesn't pull
   retrieval back to the old answer; a previous question that opens with its
   predicate (「如何安装知库？」) lends all its keywords.
3. A follow-up that names its own subject and swaps nothing stands as asked.

Words are kept whole: the connective in front (那/那么/还有…) is taken off
before jieba cuts the question, since jieba would otherwise glue it to the next
character (「那线上广告」 → 那线/上/广告). Keywords are jieba words the retrieval
analyzer keeps (``tokenize``), so stop words and particles never reach the query.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import jieba
import jieba.posseg as pseg

from knowledge.retrieval.analysis import get_analyzer

# Words that point back to something said before (jieba cuts 应该 and 其他
# whole, so 该 and 其 only match when they stand alone).
REFERENCE_WORDS = frozenset(
    "它 它们 他 他们 她 她们 这 这个 这些 那 那个 那些 那么 其 该 上述 以上 前者 后者 此 此外 呢 还有 另外 同样".split()
)
# Words that end a question's subject: its verb, copula or question word.
PREDICATE_WORDS = frozenset(
    "有 没有 是 不是 是否 的 怎么 怎样 怎么样 如何 什么 哪些 哪个 哪里 多少 几 能 能否 能不能 可以 可不可以 支持 需要 要 "
    "吗 呢 为什么 为何 包括 包含 提供 适合 属于 收费 用 在".split()
)
# At most this many characters of content (punctuation and particles aside) make a question "very short".
SHORT_CHARS = 4
_PUNCT_RE = re.compile(r"[\s\W_]+", re.UNICODE)
_PUNCT_END_RE = re.compile(r"[\s\W_]+$", re.UNICODE)
# What opens a follow-up without being part of it: 「那」「那么」「还有」「另外」… (not 那个/那些/那里, which point at something).
_LEADING_RE = re.compile(r"^(?:那么|那(?![个些里边样])|还有|另外|此外|同样|请问|而)+")
_TRAILING_RE = re.compile(r"(?:呢|吗|啊|呀|吧)+$")


@dataclass(frozen=True)
class Rewrite:
    """The standalone query and how it was made: ``none`` (first turn or unchanged), ``rules`` or ``llm``."""

    query: str
    method: str


def needs_context(question: str) -> bool:
    """True when the question refers back (a reference word) or is too short to search on its own."""
    words = jieba.lcut(question)
    if any(w in REFERENCE_WORDS for w in words):
        return True
    content = _PUNCT_RE.sub("", question)
    return len(content) <= SHORT_CHARS


def subject_of(question: str) -> str:
    """The words before the question's predicate, e.g. 「知库专业版」 in 「知库专业版有哪些功能？」 (or "")."""
    subject: list[str] = []
    for w in jieba.lcut(question.strip()):
        if w in PREDICATE_WORDS or (w.strip() and _PUNCT_RE.fullmatch(w)):
            break
        subject.append(w)
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
    if not previous_queries or not needs_context(question):
        return Rewrite(question, "none")
    previous = _PUNCT_END_RE.sub("", previous_queries[-1].strip())
    core = core_of(question)
    own = content_words(core)
    if not own:
        # Nothing searchable of its own (「为什么？」「还有呢？」): keep the question's words after the previous query.
        return Rewrite(f"{' '.join(content_words(previous))} {_PUNCT_RE.sub('', question)}".strip(), "rules")
    subject = own_subject(core)
    if not subject or _is_bare(core):
        swapped = substitute(previous, core)
        if swapped:
            return Rewrite(_with_rest(swapped, own), "rules")
        return _with_previous_subject(question, previous, own)
    swapped = substitute(subject_of(previous), subject)
    if swapped:
        return Rewrite(_with_rest(swapped, own), "rules")
    return Rewrite(question, "none")  # it names its own subject: nothing to carry


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
    """The question without its leading connective (那/那么/还有…), trailing particle (呢/吗…) and end punctuation."""
    core = _PUNCT_END_RE.sub("", question.strip())
    core = _LEADING_RE.sub("", core)
    return _TRAILING_RE.sub("", core).strip()


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
    result = _swap_numbered(previous, core)
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
    tagged = [(p.word, KINDS.get(p.flag)) for p in pseg.lcut(previous)]
    for word in pseg.lcut(core):
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
    for p in pseg.lcut(previous):
        bounds.append(bounds[-1] + len(p.word))
    for start in bounds:
        end = start + len(core)
        span = previous[start:end]
        if end in bounds and span[-1] == core[-1] and span != core and not _PUNCT_RE.search(span):
            return previous[:start] + core + previous[end:]
    return previous


def rewrite_clean(text: str, *, question: str) -> str | None:
    """Tidy an LLM's rewrite (quotes, a 「改写后的问题：」 prefix, extra lines); None when it is unusable."""
    text = (text or "").strip().splitlines()[0].strip() if (text or "").strip() else ""
    text = re.sub(r"^(改写后的问题|改写|问题|query)\s*[:：]\s*", "", text, flags=re.IGNORECASE)
    text = text.strip(" \"'“”‘’「」『』")
    if not text or len(text) > max(200, 4 * len(question)):
        return None
    return text
