"""core/last_used.py: ``last_used`` is written at most once a minute per row (API tokens and assistant/KB keys).

Against the real database, counting the queries each call makes.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import ApiToken
from accounts.tokens import token_issue
from assistants.keys import key_issue
from assistants.models import ApiKey
from core.last_used import LAST_USED_RESOLUTION, touch_last_used

pytestmark = pytest.mark.django_db


def test_a_second_touch_within_the_minute_writes_nothing(alice):
    token, _key = token_issue(user=alice, name="ci")
    first = timezone.now()
    with CaptureQueriesContext(connection) as queries:
        touch_last_used(token, now=first)
    assert len(queries) == 1 and queries[0]["sql"].startswith("UPDATE")
    assert token.last_used == first == ApiToken.objects.get(pk=token.pk).last_used
    with CaptureQueriesContext(connection) as queries:
        touch_last_used(token, now=first + LAST_USED_RESOLUTION - timedelta(seconds=1))
    assert len(queries) == 0
    assert token.last_used == first == ApiToken.objects.get(pk=token.pk).last_used


def test_a_touch_a_minute_later_writes_again(alice):
    token, _key = token_issue(user=alice)
    first = timezone.now()
    touch_last_used(token, now=first)
    later = first + LAST_USED_RESOLUTION
    with CaptureQueriesContext(connection) as queries:
        touch_last_used(token, now=later)
    assert len(queries) == 1
    assert token.last_used == later == ApiToken.objects.get(pk=token.pk).last_used


def test_the_field_is_named_by_the_caller_and_only_it_is_written(alice, kb):
    row, _key = key_issue(created_by=alice, kb=kb, name="kb key")
    ApiKey.objects.filter(pk=row.pk).update(name="renamed elsewhere")
    with CaptureQueriesContext(connection) as queries:
        touch_last_used(row, field="last_used_at")
        touch_last_used(row, field="last_used_at")
    assert len(queries) == 1
    stored = ApiKey.objects.get(pk=row.pk)
    assert stored.last_used_at == row.last_used_at is not None and stored.name == "renamed elsewhere"
