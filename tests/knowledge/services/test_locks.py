"""knowledge.locks: the KB row, then the document's, locked until the transaction ends (checked from a second
PostgreSQL connection that asks for the same rows with NOWAIT)."""
from __future__ import annotations

import psycopg
import pytest
from django.db import connection, transaction

from knowledge.locks import lock_kb, lock_kb_then_document
from knowledge.models import Document, KnowledgeBase

pytestmark = pytest.mark.django_db(transaction=True)  # committed rows: the second connection must see them


@pytest.fixture
def other():
    """A second connection to the test database, outside Django's (autocommit: each statement its own transaction)."""
    params = connection.get_connection_params()
    conn = psycopg.connect(**{k: v for k, v in params.items() if k in ("host", "port", "dbname", "user", "password")},
                           autocommit=True)
    yield conn
    conn.close()


def _locked(conn, model, pk: int) -> bool:
    """Whether another transaction holds ``model``'s row ``pk`` (a NOWAIT lock of it fails)."""
    try:
        conn.execute(f"SELECT id FROM {model._meta.db_table} WHERE id = %s FOR UPDATE NOWAIT", [pk])
    except psycopg.errors.LockNotAvailable:
        return True
    return False


def _document(kb) -> Document:
    return Document.objects.create(kb=kb, title="a", source_name="a.md", doc_type="markdown", size=1, sha256="0" * 64)


def test_lock_kb_then_document_holds_both_rows_until_the_transaction_ends(kb, other):
    document = _document(kb)
    with transaction.atomic():
        locked = lock_kb_then_document(kb.pk, document.pk)
        assert locked is not None and locked.pk == document.pk
        assert _locked(other, KnowledgeBase, kb.pk)
        assert _locked(other, Document, document.pk)
    assert not _locked(other, KnowledgeBase, kb.pk)
    assert not _locked(other, Document, document.pk)


def test_lock_kb_then_document_of_a_deleted_document_is_none_and_still_locks_the_kb(kb, other):
    document = _document(kb)
    gone = document.pk
    document.delete()
    with transaction.atomic():
        assert lock_kb_then_document(kb.pk, gone) is None
        assert _locked(other, KnowledgeBase, kb.pk)


def test_lock_kb_holds_the_kb_row_only(kb, other):
    document = _document(kb)
    with transaction.atomic():
        assert lock_kb(kb.pk).pk == kb.pk
        assert _locked(other, KnowledgeBase, kb.pk)
        assert not _locked(other, Document, document.pk)
    assert not _locked(other, KnowledgeBase, kb.pk)
    with pytest.raises(KnowledgeBase.DoesNotExist), transaction.atomic():
        lock_kb(kb.pk + 1000)
