"""A search process for the cross-process tests: one JSON request a line on stdin, one JSON answer a line on stdout.

Run as ``python -m tests.searcher`` with a platform environment (DATABASE_URL, REDIS_URL, ...). It
searches as a web process does (``cached_payload``: the Redis result cache, then the BM25 tiers)
and keeps its caches for as long as it lives, so a test can change a KB from another process and
see whether this one's next search notices. Request: ``{"username", "kb_id", "query", "mode"}``;
answer: ``{"chunks": [{"id", "document_id", "content"}], "cached", "bm25_source"}``, where
``bm25_source`` is where this process got the KB's BM25 index ("l1" = what it already held, "l0" = the machine's file).
"""
from __future__ import annotations

import json
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model

    from knowledge.keyword_store import keyword_store
    from knowledge.retrieval.request import SearchRequest
    from knowledge.services.search import Search
    from knowledge.services.search_cache import cached_payload

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        user = get_user_model().objects.get(username=request["username"])
        asked = SearchRequest(query=request["query"], mode=request.get("mode", "keyword"), top_k=10)
        payload = cached_payload(Search(asked, user=user, kb_ids=[request["kb_id"]]))
        chunks = [{"id": r["chunk_id"], "document_id": r["document"]["id"], "content": r["content"]} for r in payload["results"]]
        print(json.dumps({"chunks": chunks, "cached": payload["cached"],
                          "bm25_source": keyword_store().last_source.get(request["kb_id"])}, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()
