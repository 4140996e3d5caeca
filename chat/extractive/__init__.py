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

The stages, one module each: ``units`` (a source as units), ``asks`` (what a question asks for), ``scoring``,
``choosing``, ``rendering``; ``answer`` runs them.
"""
from chat.extractive.answer import MAX_EXTRACT_CHARS, extractive_answer
from chat.extractive.asks import holds, is_list_question, question_asks
from chat.extractive.units import Unit, source_text, units

__all__ = ["MAX_EXTRACT_CHARS", "Unit", "extractive_answer", "holds", "is_list_question", "question_asks",
           "source_text", "units"]
