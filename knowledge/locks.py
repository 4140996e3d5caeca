"""The row locks a writer of a KB's content takes, in the one order every writer keeps: the KB row, then documents.

Every writer takes the KB row first, so two writers of one KB queue on that row and never hold each other's
next row (no deadlock); call these inside ``transaction.atomic()``, the locks last until it ends.
"""
from __future__ import annotations

from knowledge.models import Document, KnowledgeBase


def lock_kb(kb_id: int) -> KnowledgeBase:
    """The KB's row, locked (``KnowledgeBase.DoesNotExist`` when it is gone): writers of the KB run one at a time."""
    return KnowledgeBase.objects.select_for_update().get(pk=kb_id)


def lock_kb_then_document(kb_id: int, document_id: int) -> Document | None:
    """The document's row, locked after its KB's row; None when the document (or its KB) is gone."""
    KnowledgeBase.objects.select_for_update().filter(pk=kb_id).first()
    return Document.objects.select_for_update().filter(pk=document_id).first()
