"""Issue 22: a search's KBs, the caller's roles and the search scope resolved in one statement
(``knowledge.selectors.kbs_get_for_user``), and worker threads that keep their connection (``core.dbconn``)."""
from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from core.dbconn import close_worker_connections, in_kept_connection
from core.errors import ApplicationError
from knowledge.access import scope_for
from knowledge.models import Role
from knowledge.selectors import kb_get_for_user, kbs_get_for_user


def _outcome(fn):
    try:
        return fn()
    except ApplicationError as exc:
        return exc.code


@pytest.mark.django_db
def test_the_one_statement_agrees_with_the_per_kb_checks_on_the_matrix(matrix):
    users, (kb1, kb2), _ = matrix
    missing = kb2.pk + 1000
    orders = [[kb1.pk], [kb2.pk], [kb1.pk, kb2.pk], [kb2.pk, kb1.pk], [missing, kb1.pk], [kb1.pk, missing]]
    for name, user in users.items():
        for ids in orders:
            for min_role in (Role.VIEWER, Role.EDITOR, Role.OWNER):
                def one_by_one(user=user, ids=ids, min_role=min_role):
                    return [kb_get_for_user(user=user, kb_id=i, min_role=min_role) for i in ids]
                expected = _outcome(one_by_one)
                got = _outcome(lambda user=user, ids=ids, min_role=min_role:
                               kbs_get_for_user(user=user, kb_ids=ids, min_role=min_role))
                if isinstance(expected, str):
                    assert got == expected, (name, ids, min_role)
                    continue
                kbs, scope = got
                assert [kb.pk for kb in kbs] == ids, (name, ids)
                want = scope_for(user=user, kbs=expected)
                assert (scope.user_id, sorted(scope.group_ids), scope.full_access_kb_ids) == \
                    (want.user_id, sorted(want.group_ids), want.full_access_kb_ids), (name, ids)


@pytest.mark.django_db
def test_the_check_is_one_query_for_several_kbs(matrix):
    users, (kb1, kb2), _ = matrix
    with CaptureQueriesContext(connection) as queries:
        kbs, scope = kbs_get_for_user(user=users["gview"], kb_ids=[kb2.pk, kb1.pk])
    assert len(queries.captured_queries) == 1
    assert [kb.pk for kb in kbs] == [kb2.pk, kb1.pk] and scope.full_access_kb_ids == frozenset()
    assert len(scope.group_ids) == 2


@pytest.mark.django_db(transaction=True)
def test_a_worker_thread_keeps_its_connection_until_closed():
    # DB_CONN_MAX_AGE is 0 in tests: close_old_connections at a task's end (the old way) closed it every time.
    seen = []

    def task():
        with connection.cursor() as cur:
            cur.execute("SELECT pg_backend_pid()")
            seen.append(cur.fetchone()[0])
        return connections["default"]

    results = []

    def worker():
        results.append(in_kept_connection(task))
        results.append(in_kept_connection(task))
        results.append(connections["default"].connection is not None)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen[0] == seen[1], "the second task used a new backend"
    assert results[2] is True
    close_worker_connections()
    assert results[0].connection is None
