"""Helpers shared by test modules."""
from __future__ import annotations

import redis


def redis_available(url: str) -> bool:
    """Whether the Redis server at ``url`` answers (``make test`` starts one)."""
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False
