"""Documents made before versions were kept under one id: each chain of replacements becomes one document.

The old swap deleted a replaced row when its replacement became ready, so a chain's only row left is its newest
(ready) one: it keeps its id (the chunks, group restrictions and citations name it), and every older id of the
chain, known from the audit log's ``document.replace`` entries (``changes.replaces``: the id it replaced), becomes a
``DocumentAlias`` of it, so old links redirect. The history rows come from the same entries (without files: the
old swap deleted them) plus the current version's, which keeps its file.
"""
from django.db import migrations
from django.db.models import Count


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def fold_chains(apps, schema_editor):
    Document = apps.get_model("knowledge", "Document")
    DocumentVersion = apps.get_model("knowledge", "DocumentVersion")
    DocumentAlias = apps.get_model("knowledge", "DocumentAlias")
    AuditEntry = apps.get_model("audit", "AuditEntry")
    entries = {}  # document id -> (entry of its upload or replace, the id it replaced)
    for entry in AuditEntry.objects.filter(object_type="document", action__in=["document.upload", "document.replace"]).order_by("id"):
        own = _int(entry.object_id)
        if own is not None:
            entries[own] = (entry, _int((entry.changes or {}).get("replaces")))
    newer = {replaced: own for own, (_, replaced) in entries.items() if replaced is not None}
    existing = set(Document.objects.values_list("id", flat=True))
    for document in Document.objects.filter(status="ready").annotate(n=Count("chunks")):
        chain = [document.pk]  # newest first
        while True:
            older = entries.get(chain[-1], (None, None))[1]
            if older is None or older in chain or older in existing or newer.get(older) != chain[-1]:
                break
            chain.append(older)
        for old_id in chain[1:]:
            DocumentAlias.objects.get_or_create(old_id=old_id, defaults={"document_id": document.pk})
        DocumentVersion.objects.get_or_create(document_id=document.pk, number=document.version, defaults={
            "uploaded_by_id": document.uploaded_by_id, "uploaded_at": document.created_at, "size": document.size,
            "sha256": document.sha256, "chunk_count": document.n, "file": document.file.name or "",
            "chunk_size": document.chunk_size, "chunk_overlap": document.chunk_overlap})
        replaced_at, replaced_by = document.created_at, document.uploaded_by_id
        for old_id in chain[1:]:
            entry = entries[old_id][0]
            changes = entry.changes or {}
            number = _int(changes.get("version"))
            if number is not None and number < document.version:
                DocumentVersion.objects.get_or_create(document_id=document.pk, number=number, defaults={
                    "uploaded_by_id": entry.actor_id, "uploaded_at": entry.at, "size": _int(changes.get("size")) or 0,
                    "sha256": str(changes.get("sha256") or "")[:64], "file": "",
                    "replaced_at": replaced_at, "replaced_by_id": replaced_by})
            replaced_at, replaced_by = entry.at, entry.actor_id


class Migration(migrations.Migration):

    dependencies = [
        ("audit", "0005_document_version_restore_action"),
        ("knowledge", "0018_document_versions"),
    ]

    operations = [migrations.RunPython(fold_chains, migrations.RunPython.noop)]
