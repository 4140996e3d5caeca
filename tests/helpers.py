"""Helpers shared by test modules."""
from __future__ import annotations

from contextlib import contextmanager

import redis


def redis_available(url: str) -> bool:
    """Whether the Redis server at ``url`` answers (``make test`` starts one)."""
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


@contextmanager
def celery_broker(url: str):
    """Point the Celery app at the broker ``url`` for the block, and back afterwards.

    The app caches its first connection pool and producer pool; without
    dropping them, tasks would still go to the broker an earlier test used.
    """
    from config.celery import app

    old = app.conf.broker_url

    def point(to: str) -> None:
        app.conf.broker_url = to
        app._pool = None
        app.amqp._producer_pool = None

    point(url)
    try:
        yield app
    finally:
        point(old)
