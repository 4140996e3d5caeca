"""Prompts, the context budget and citation mapping (answer only from the sources, cite them)."""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.jsonable import candidate_json
from knowledge.retrieval.types import Candidate

# A per-chunk cap keeps one long chunk from crowding out the rest;
# the total budget bounds the prompt whatever top_k a KB is set to.
MAX_CHUNK_CHARS = 800
MAX_CONTEXT_CHARS = 6000
# Sources below this share of the confidence line are left out (``answer_candidates``).
SOURCE_FLOOR_SHARE = 0.5
# History given to the rewriter and the generator: the last turns, each cut short.
HISTORY_TURNS = 3
HISTORY_CHARS = 400

# The answer's "not found" verdict: a reply that is this marker (or starts with it) is recorded as not found.
NOT_FOUND_MARKER = "[[NOT_FOUND]]"

# The system prompt is a persona (a KB's own ``system_prompt`` replaces it) followed by the rules the
# answer's mechanics need (sources only, [n] citations, the not-found marker), which are always sent.
DEFAULT_PERSONA = (
    "你是知库（zhiku）的知识库问答助手。"
    "回答使用与问题相同的语言，简洁、准确，可以使用简单的 Markdown（段落、列表、加粗、行内代码）。"
)
ANSWER_RULES = (
    "请严格依据下面编号的知识片段回答用户的问题，"
    "不要编造片段中没有的信息，也不要使用片段以外的知识。"
    "每句用到片段内容的话，在句末用方括号标注片段编号，例如 [1] 或 [2][3]；只能引用给出的编号。"
    f"如果片段中没有问题的答案，只回复 {NOT_FOUND_MARKER}，不要输出任何其他内容；"
    "如果片段只能回答一部分，回答能回答的部分，并说明缺少什么。"
)
SYSTEM_PROMPT = DEFAULT_PERSONA + ANSWER_RULES


def system_prompt(custom: str = "") -> str:
    """The system message: a KB's own prompt (or the default persona), then the fixed answer rules."""
    custom = (custom or "").strip()
    return f"{custom}\n\n{ANSWER_RULES}" if custom else SYSTEM_PROMPT


REWRITE_PROMPT = (
    "你是检索查询改写助手。根据对话历史，把用户的最新问题改写成一个不依赖上下文、可以单独用于检索的问题："
    "补全代词和省略的主语（如「它」「那个」「呢」所指的对象），保留专有名词、型号和数字。"
    "只输出改写后的问题本身，不要回答问题，不要解释，不要加引号。如果最新问题已经完整独立，原样输出。"
)


@dataclass
class Source:
    """A chunk given to the answer, numbered ``n`` as the answer cites it."""

    n: int
    candidate: Candidate
    text: str
    """The chunk text as given to the model (cut to the per-chunk cap)."""

    def label(self) -> str:
        """「title › section › path（第 3–4 页）」: where the chunk comes from, for prompts and tool output."""
        c = self.candidate
        parts = [c.title or c.source_name or f"文档 {c.document_id}"]
        parts += [s for s in c.section_path if s and s != parts[0]]
        label = " › ".join(parts)
        pages = page_label(c.page_start, c.page_end)
        return f"{label}（{pages}）" if pages else label

    def payload(self) -> dict[str, Any]:
        """The JSON shape of a source in events and in ``Message.sources``."""
        return {"n": self.n, **candidate_json(self.candidate, content=self.text)}


# A citation is its source's payload without the text and scores.
CITATION_FIELDS = ("n", "chunk_id", "kb_id", "document", "section_path", "pages")


@dataclass
class Context:
    """The sources that fit the budget and the text block built from them."""

    sources: list[Source] = field(default_factory=list)
    text: str = ""
    dropped: int = 0
    """Candidates left out because the budget was spent."""


def page_label(start: int | None, end: int | None) -> str:
    if start is None:
        return ""
    if end is None or end == start:
        return f"第 {start} 页"
    return f"第 {start}–{end} 页"


def cap_text(text: str, limit: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def answer_candidates(candidates: Sequence[Candidate], *, threshold: float | None,
                      max_sources: int | None = None) -> list[Candidate]:
    """The candidates worth giving to the answer: the first always, the others when relevant enough.

    A candidate below ``SOURCE_FLOOR_SHARE`` × ``threshold`` (the confidence line; or never
    judged) would be shown as a source with a relevance near 0 and lend the
    answer sentences from text that does not hold it; ``max_sources`` caps
    the rest (the KB setting).
    """
    floor = SOURCE_FLOOR_SHARE * float(threshold or 0.0)
    kept = [c for i, c in enumerate(candidates)
            if i == 0 or (c.relevance is not None and float(c.relevance) >= floor)]
    return kept[:max_sources] if max_sources else kept


def context_build(candidates: Sequence[Candidate], *, chunk_chars: int = MAX_CHUNK_CHARS,
                  budget_chars: int = MAX_CONTEXT_CHARS) -> Context:
    """Number the candidates in rank order and keep those that fit ``budget_chars``.

    Each chunk is cut to ``chunk_chars``; the first chunk is always kept (cut to
    the budget if need be) so a hit never reaches the model with no context.
    """
    ctx = Context()
    blocks: list[str] = []
    used = 0
    for c in candidates:
        text = cap_text(c.content, chunk_chars)
        if not text:
            continue
        n = len(ctx.sources) + 1
        source = Source(n=n, candidate=c, text=text)
        block = f"[{n}] 来源：{source.label()}\n{text}"
        if used + len(block) > budget_chars:
            if ctx.sources:
                ctx.dropped += 1
                continue
            text = cap_text(text, max(budget_chars - (len(block) - len(text)), 50))
            source.text = text
            block = f"[{n}] 来源：{source.label()}\n{text}"
        ctx.sources.append(source)
        blocks.append(block)
        used += len(block) + 2
    ctx.text = "\n\n".join(blocks)
    return ctx


# Added to the question when retrieval's verdict is ``uncertain``: the LLM is the reader that decides.
UNCERTAIN_NOTE = (
    "（检索判断：这些片段与问题的相关性不确定，可能并不包含答案。请逐一核对片段："
    f"只有片段确实包含答案时才回答；否则只回复 {NOT_FOUND_MARKER}。）"
)


def answer_messages(*, question: str, standalone: str, context: Context,
                    history: Sequence[tuple[str, str]] = (), custom_prompt: str = "",
                    uncertain: bool = False) -> list[dict[str, str]]:
    """Chat-completion messages: the system prompt, the last turns, then the sources and the question.

    ``uncertain``: retrieval's verdict was uncertain, and the model is told so (``UNCERTAIN_NOTE``).
    """
    messages = [{"role": "system", "content": system_prompt(custom_prompt)}]
    for role, content in list(history)[-2 * HISTORY_TURNS:]:
        messages.append({"role": role, "content": cap_text(content, HISTORY_CHARS)})
    ask = f"问题：{question}"
    if standalone and standalone != question:
        ask += f"\n（结合上下文，问题的完整含义是：{standalone}）"
    if uncertain:
        ask += f"\n{UNCERTAIN_NOTE}"
    messages.append({"role": "user", "content": f"知识片段：\n{context.text}\n\n{ask}"})
    return messages


def rewrite_messages(*, question: str, history: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """Messages for the non-streamed rewrite completion."""
    lines = []
    for role, content in list(history)[-2 * HISTORY_TURNS:]:
        who = "用户" if role == "user" else "助手"
        lines.append(f"{who}：{cap_text(content, HISTORY_CHARS)}")
    user = "对话历史：\n" + "\n".join(lines) + f"\n\n最新问题：{question}\n\n改写后的问题："
    return [{"role": "system", "content": REWRITE_PROMPT}, {"role": "user", "content": user}]


_CITE_RE = re.compile(r"[\[【]\s*(\d{1,3}(?:\s*[,，、]\s*\d{1,3})*)\s*[\]】]")


def cited_numbers(answer: str) -> list[int]:
    """Citation numbers in order of first use: ``[1]``, ``[2][3]``, ``[1, 2]`` and full-width ``【1】``."""
    seen: list[int] = []
    for m in _CITE_RE.finditer(answer):
        for part in re.split(r"[,，、]", m.group(1)):
            n = int(part.strip())
            if n not in seen:
                seen.append(n)
    return seen


def citation_marks(answer: str) -> list[tuple[int, int, list[int]]]:
    """Each citation marker of ``answer`` as (start, end, its numbers), in order: ``answer[start:end]`` is the marker."""
    return [(m.start(), m.end(), [int(p.strip()) for p in re.split(r"[,，、]", m.group(1))])
            for m in _CITE_RE.finditer(answer)]


def without_citations(answer: str) -> str:
    """The answer as read, without its ``[n]`` markers (answer evaluation measures the text)."""
    return _CITE_RE.sub("", answer or "")


def citations_map(answer: str, sources: Sequence[Source]) -> list[dict[str, Any]]:
    """The sources the answer cites, in order of first citation; numbers that match no source are ignored."""
    by_n = {s.n: s for s in sources}
    out = []
    for n in cited_numbers(answer):
        s = by_n.get(n)
        if s is None:
            continue
        payload = s.payload()
        out.append({key: payload[key] for key in CITATION_FIELDS})
    return out


def confidence_of(sources: Sequence[Source], citations: Sequence[dict[str, Any]]) -> float:
    """Mean relevance of the cited sources (none cited: of the top three), in [0, 1]."""
    cited = {c["n"] for c in citations}
    chosen = [s for s in sources if s.n in cited] or list(sources[:3])
    values = [float(s.candidate.relevance) for s in chosen if s.candidate.relevance is not None]
    if not values:
        return 0.0
    return round(min(max(sum(values) / len(values), 0.0), 1.0), 4)
