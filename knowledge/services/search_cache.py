"""The search API's answers cached in Redis as JSON, keyed by everything that changes them (never pickled)."""
from __future__ import annotations

import hashlib
import json

from django.conf import settings

from knowledge.services.search import Search, payload, resolve, run
from knowledge.stores import redis_client


def cached_payload(asked: Search) -> dict:
    """``search`` + ``payload``, cached in Redis as JSON under the KBs' versions (debug is never cached).

    Every field of the request that changes the result is part of the key (``SearchRequest.cache_key_parts``).
    Input and access are checked before the cache is read (``resolve``), and what the caller may read is part
    of the key: a member removed or demoted since a result was cached gets a 404 or a result computed for the
    access they hold now, never the old one.
    """
    request, kbs, scope = resolve(asked)  # 400 and 404 before any cache is read
    user = asked.user
    client = None if request.debug else redis_client()
    key = None
    if client is not None:
        # Versions change with content; the two lines and the calibration change the verdict; the groups and
        # the KBs where the caller sees restricted documents (editor or above) decide what they may read.
        # Learning (its switch, and the confirmed labels' version) changes the ranking too.
        versions = sorted((kb.pk, kb.version, kb.score_threshold, kb.answer_threshold, kb.calibration_slope,
                           kb.calibration_offset, kb.learn_from_feedback, kb.labels_version) for kb in kbs)
        raw = json.dumps([user.pk, user.is_superuser, sorted(scope.group_ids), sorted(scope.full_access_kb_ids), versions,
                          [kb.pk for kb in kbs], request.cache_key_parts(), settings.ZHIKU_RERANK_MODEL,
                          settings.ZHIKU_READER, sorted((asked.overrides or {}).items()), asked.calibration],
                         default=str, ensure_ascii=False)
        key = settings.ZHIKU_REDIS_PREFIX + ":search:" + hashlib.sha256(raw.encode()).hexdigest()
        try:
            blob = client.get(key)
            if blob:
                hit = json.loads(blob)
                hit["cached"] = True
                return hit
        except Exception:  # noqa: BLE001 - a broken cache must not fail the search
            pass
    result = run(request, kbs, scope=scope, asked=asked)
    out = payload(result, debug=request.debug)
    out["cached"] = False
    if client is not None and key is not None:
        try:
            client.set(key, json.dumps(out, ensure_ascii=False, default=str), ex=settings.ZHIKU_SEARCH_CACHE_TTL)
        except Exception:  # noqa: BLE001 - a broken cache must not fail the search
            pass
    return out
