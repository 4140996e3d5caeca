"""Cached search results expire when a document's group restriction changes, however it is changed.

Search results are cached under the KB versions and the caller's access scope
(groups, KBs with full access): a membership or group change changes the
scope, but a restriction change changes neither, so it bumps the versions of
the KBs whose documents it touched. A signal catches every path (the admin,
the upload service, the shell, either side of the relation).
"""
from __future__ import annotations

from django.db.models.signals import m2m_changed
from django.dispatch import receiver

from knowledge.access import Restriction
from knowledge.models import Document
from knowledge.services.kbs import kb_bump_version


def _kb_ids(instance, *, reverse: bool, pk_set) -> set[int]:
    """The KBs of the documents concerned: the instance itself, or (from a group's side) the documents named."""
    if not reverse:
        return {instance.kb_id}
    documents = Document.objects.filter(pk__in=pk_set) if pk_set is not None else instance.restricted_documents.all()
    return set(documents.values_list("kb_id", flat=True))


@receiver(m2m_changed, sender=Restriction, dispatch_uid="knowledge.restriction_changed")
def restriction_changed(sender, instance, action, reverse, pk_set, **kwargs) -> None:
    if action == "pre_clear" and reverse:
        # A group's clear() names no documents: find them before they are unlinked.
        instance._restriction_kb_ids = _kb_ids(instance, reverse=True, pk_set=None)
        return
    if action == "post_clear":
        kb_ids = instance.__dict__.pop("_restriction_kb_ids", set()) if reverse else {instance.kb_id}
    elif action in ("post_add", "post_remove") and pk_set:
        kb_ids = _kb_ids(instance, reverse=reverse, pk_set=pk_set)
    else:
        return
    for kb_id in kb_ids:
        kb_bump_version(kb_id=kb_id)
