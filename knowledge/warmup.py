"""Load the tokenizer and the default embedding model in the background when a server process starts."""
from __future__ import annotations

import logging
import threading

logger = logging.getLogger(__name__)


def warm_up() -> None:
    from django.conf import settings

    from knowledge.embeddings import get_embedder
    from knowledge.retrieval.analysis import get_analyzer

    try:
        get_analyzer().tokenize("预热 warm-up")
        get_embedder(settings.ZHIKU_EMBEDDING_MODEL).embed_query("预热")
    except Exception:  # noqa: BLE001 - a failed warm-up only means a slower first query
        logger.warning("warm-up failed", exc_info=True)


def warm_up_in_background() -> threading.Thread:
    thread = threading.Thread(target=warm_up, name="zhiku-warmup", daemon=True)
    thread.start()
    return thread
