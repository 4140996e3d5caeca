"""Follow-up questions → standalone retrieval queries: the deterministic fallback used when no LLM is configured.

A follow-up such as 「那它的价格呢？」 names nothing a search could find. When
a question refers back (a pronoun or ellipsis marker: 它/他/她/这个/那个/那/其/
该/上述/呢…) or is very short, the subject of the previous standalone query is
put in front of the question's own keywords: after 「知库专业版有哪些功能？」
it becomes 「知库专业版 价格」.

The subject is the previous question's words before its predicate (the first
of 有/是/的/怎么/如何/哪些/支持…, cut with jieba): 「知库专业版」 rather than
every keyword, so the old question's attribute (功能) doesn't pull retrieval
back to the old answer. A previous question that opens with its predicate
(「如何安装知库？」) has no such subject; then all its keywords are used.
Keywords come from the retrieval analyzer's ``tokenize``, the same tokens BM25
searches with, so stop words and particles never reach the query.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import jieba

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
    analyzer = get_analyzer()
    previous = previous_queries[-1]
    own = [t for t in analyzer.tokenize(question) if t not in REFERENCE_WORDS]
    subject = subject_of(previous)
    if subject:
        prefix_tokens = analyzer.tokenize(subject)
        prefix = subject
    else:
        prefix_tokens = analyzer.tokenize(previous)
        prefix = " ".join(prefix_tokens)
    if not prefix_tokens or set(prefix_tokens) <= set(own):
        return Rewrite(question, "none")  # nothing to add, or the subject is already named
    if own:
        query = f"{prefix} {' '.join(t for t in own if t not in prefix_tokens)}".strip()
    else:
        # Nothing searchable of its own (「为什么？」「还有呢？」): keep the question's words after the previous query.
        query = f"{' '.join(analyzer.tokenize(previous))} {_PUNCT_RE.sub('', question)}".strip()
    return Rewrite(query, "rules")


def rewrite_clean(text: str, *, question: str) -> str | None:
    """Tidy an LLM's rewrite (quotes, a 「改写后的问题：」 prefix, extra lines); None when it is unusable."""
    text = (text or "").strip().splitlines()[0].strip() if (text or "").strip() else ""
    text = re.sub(r"^(改写后的问题|改写|问题|query)\s*[:：]\s*", "", text, flags=re.IGNORECASE)
    text = text.strip(" \"'“”‘’「」『』")
    if not text or len(text) > max(200, 4 * len(question)):
        return None
    return text
